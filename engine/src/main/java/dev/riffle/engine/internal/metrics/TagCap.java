package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Caps the distinct values of the user-chosen tags ({@code queue}, {@code kind}) at {@link RiffleMeter#MAX_TAG_VALUES}
 * per tag; later values read {@link RiffleMeter#OTHER_TAG_VALUE}. Other tags (ring, outcome, table) are bounded by the
 * engine itself and pass through.
 */
final class TagCap {
    private final int max;
    private final Map<String, Set<String>> seen = new ConcurrentHashMap<>();

    TagCap(int max) {
        this.max = max;
    }

    String cap(String key, String value) {
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
