package dev.riffle.engine.api;

import java.time.Instant;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A job to enqueue. Build with {@link #builder(String)}; the builder validates every field and throws
 * {@link InvalidJobException} naming the field and the limit.
 *
 * @param kind job kind, 1..128 characters of {@code [A-Za-z0-9_.:-]}, starting with a letter or digit
 * @param queue queue name, same rule as kind (default {@value #DEFAULT_QUEUE})
 * @param argsJson a JSON object (default {@code {}}); size limit is enforced by the engine configuration
 * @param priority 1 (most urgent) .. 4 (default {@value #DEFAULT_PRIORITY})
 * @param maxAttempts 1..1000 (default {@value #DEFAULT_MAX_ATTEMPTS})
 * @param runAt when to run; {@code null} or a past instant means now, a future instant schedules the job
 */
public record NewJob(String kind, String queue, String argsJson, int priority, int maxAttempts, @Nullable Instant runAt) {

    /** Default queue name. */
    public static final String DEFAULT_QUEUE = "default";
    /** Default priority. */
    public static final int DEFAULT_PRIORITY = 2;
    /** Default maximum attempts. */
    public static final int DEFAULT_MAX_ATTEMPTS = 25;
    /** Longest queue or kind name. */
    public static final int MAX_NAME_LENGTH = 128;

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0," + (MAX_NAME_LENGTH - 1) + "}");
    // Far enough to catch unit mistakes (seconds vs millis) without limiting real schedules.
    private static final Instant MAX_RUN_AT = Instant.parse("2200-01-01T00:00:00Z");
    private static final Instant MIN_RUN_AT = Instant.parse("2000-01-01T00:00:00Z");

    /** Validates all fields. */
    public NewJob {
        checkName("kind", kind);
        checkName("queue", queue);
        if (argsJson == null) {
            throw new InvalidJobException("args", "must not be null (use \"{}\")");
        }
        JsonObjectCheck.requireObject(argsJson);
        if (priority < 1 || priority > 4) {
            throw new InvalidJobException("priority", "must be between 1 and 4, got " + priority);
        }
        if (maxAttempts < 1 || maxAttempts > 1000) {
            throw new InvalidJobException("maxAttempts", "must be between 1 and 1000, got " + maxAttempts);
        }
        if (runAt != null && (runAt.isAfter(MAX_RUN_AT) || runAt.isBefore(MIN_RUN_AT))) {
            throw new InvalidJobException("runAt", "must be between " + MIN_RUN_AT + " and " + MAX_RUN_AT + ", got " + runAt);
        }
    }

    private static void checkName(String field, @Nullable String value) {
        if (value == null) {
            throw new InvalidJobException(field, "must not be null");
        }
        if (!NAME.matcher(value).matches()) {
            throw new InvalidJobException(field, "'" + abbreviate(value) + "' is invalid: 1.." + MAX_NAME_LENGTH
                    + " characters of [A-Za-z0-9_.:-], starting with a letter or digit");
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }

    /** Starts a builder for a job of this kind. */
    public static Builder builder(String kind) {
        return new Builder(kind);
    }

    /** Mutable builder; {@link #build()} validates. */
    public static final class Builder {
        private final String kind;
        private String queue = DEFAULT_QUEUE;
        private String argsJson = "{}";
        private int priority = DEFAULT_PRIORITY;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private @Nullable Instant runAt;

        private Builder(String kind) {
            this.kind = kind;
        }

        /** Queue name (default {@value NewJob#DEFAULT_QUEUE}). */
        public Builder queue(String queue) {
            this.queue = queue;
            return this;
        }

        /** Arguments as JSON object text (default {@code {}}). */
        public Builder args(String argsJson) {
            this.argsJson = argsJson;
            return this;
        }

        /** Priority 1..4 (default {@value NewJob#DEFAULT_PRIORITY}). */
        public Builder priority(int priority) {
            this.priority = priority;
            return this;
        }

        /** Maximum attempts 1..1000 (default {@value NewJob#DEFAULT_MAX_ATTEMPTS}). */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /** Run at this instant; a future instant schedules the job. */
        public Builder runAt(@Nullable Instant runAt) {
            this.runAt = runAt;
            return this;
        }

        /** Validates and builds. */
        public NewJob build() {
            return new NewJob(kind, queue, argsJson, priority, maxAttempts, runAt);
        }
    }
}
