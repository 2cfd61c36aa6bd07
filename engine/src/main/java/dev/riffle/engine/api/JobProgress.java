package dev.riffle.engine.api;

import org.jspecify.annotations.Nullable;

/**
 * A progress checkpoint of a running attempt. It is buffered in memory, written with the next heartbeat (or at
 * once with {@link Job#flushProgress()}), kept in {@code attempt_state}, and carried into the job's payload when
 * the attempt ends in a retry, so the next attempt can resume from it ({@link Job#payloadJson()}).
 *
 * @param percent 0..100
 * @param message short human-readable status, or null
 * @param metadataJson a JSON object with whatever the handler needs to resume, or null; its syntax is checked here,
 *                     and a checkpoint that {@code jsonb} cannot store is refused by the database when it is written
 *                     ({@link Job#flushProgress()} fails with {@link InvalidJobException} for
 *                     {@code progress.metadata}; a heartbeat drops it and keeps the attempt's other evidence)
 */
public record JobProgress(int percent, @Nullable String message, @Nullable String metadataJson) {

    /** Longest message, in characters. */
    public static final int MAX_MESSAGE = 1000;

    /** Validates. */
    public JobProgress {
        if (percent < 0 || percent > 100) {
            throw new InvalidJobException("progress.percent", "must be between 0 and 100, got " + percent);
        }
        if (message != null && message.length() > MAX_MESSAGE) {
            throw new InvalidJobException("progress.message", "must be at most " + MAX_MESSAGE + " characters");
        }
        // toJson() would write a NUL as a \u0000 escape, which jsonb refuses; refusing it here names the message
        // instead of the metadata, the only other text a heartbeat's rejection can come from.
        if (message != null && message.indexOf('\0') >= 0) {
            throw new InvalidJobException("progress.message", "must not contain the NUL character");
        }
        if (metadataJson != null) {
            JsonObjectCheck.requireObject(metadataJson, "progress.metadata");
        }
    }

    /** The JSON object stored in {@code attempt_state.progress}. */
    public String toJson() {
        StringBuilder b = new StringBuilder("{\"percent\":").append(percent);
        if (message != null) {
            b.append(",\"message\":");
            quote(b, message);
        }
        if (metadataJson != null) {
            b.append(",\"metadata\":").append(metadataJson);
        }
        return b.append('}').toString();
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
