package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Caps the distinct values of the user-chosen tags ({@code queue}, {@code kind}) at {@link RiffleMeter#MAX_TAG_VALUES}
 * per tag; later values read {@link RiffleMeter#OTHER_TAG_VALUE}. Shared by the meters and the observations
 * (internal.tracing). Other tags (ring, outcome, table) are bounded by the
 * engine itself and pass through.
 */
public final class TagCap {
    private final int max;
    private final Map<String, Set<String>> seen = new ConcurrentHashMap<>();

    /** Keeps at most {@code max} distinct values per capped tag. */
    public TagCap(int max) {
        this.max = max;
    }

    /** {@code value} as the tag {@code key} records it: itself, or the other-value past the cap. */
    public String cap(String key, String value) {
        if (!"queue".equals(key) && !"kind".equals(key)) {
            return value;
        }
        Set<String> values = seen.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet());
        if (values.contains(value)) {
            return value;
        }
        if (values.size() >= max) {
            return RiffleMeter.OTHER_TAG_VALUE;
        }
        values.add(value);
        return value;
    }
}
