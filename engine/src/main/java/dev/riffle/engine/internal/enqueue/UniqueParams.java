package dev.riffle.engine.internal.enqueue;

import dev.riffle.engine.api.UniqueOptions;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * {@link UniqueOptions} as the parameters of {@code unique_key_of} and {@code enqueue_unique_jobs}
 * (R__15_unique.sql): the args selector as JSON ({@code true}: whole args, an array: those fields, null: none), the
 * explicit key, the period in milliseconds and the state mask as a {@code job_state[]} literal. Values travel as
 * bind parameters; the JSON text built here only quotes the field names, which {@link UniqueOptions} has already
 * checked for control characters.
 */
public record UniqueParams(@Nullable String fieldsJson, @Nullable String key, @Nullable Long periodMs, String states) {

    /** Encodes {@code u}. */
    public static UniqueParams of(UniqueOptions u) {
        String fields = null;
        List<String> f = u.argsFields();
        if (f != null) {
            fields = f.isEmpty() ? "true" : f.stream().map(UniqueParams::quote).collect(Collectors.joining(",", "[", "]"));
        }
        Long period = u.period() == null ? null : u.period().toMillis();
        String states = u.states().stream().sorted().map(s -> s.name().toLowerCase(Locale.ROOT))
                .collect(Collectors.joining(",", "{", "}"));
        return new UniqueParams(fields, u.key(), period, states);
    }

    private static String quote(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
