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
 * @param argsJson a JSON object (default {@code {}}), its syntax checked here; the size limit is enforced by the
 *                 engine configuration, and what {@code jsonb} cannot store (a <code>&#92;u0000</code> escape, a
 *                 number beyond {@code numeric}) is refused by the database at enqueue, also as
 *                 {@link InvalidJobException} for {@code args}. Null exactly when {@code typedArgs} is set
 * @param priority 1 (most urgent) .. 4 (default {@value #DEFAULT_PRIORITY})
 * @param maxAttempts 1..1000 (default {@value #DEFAULT_MAX_ATTEMPTS})
 * @param runAt when to run; {@code null} or a past instant means now, a future instant schedules the job; must lie in
 *              [{@link #MIN_RUN_AT}, {@link #MAX_RUN_AT})
 * @param typedArgs arguments as an object, encoded to JSON at enqueue by the engine's {@link ArgsCodec}
 *                  ({@code RiffleConfig.Builder.argsCodec}); null (the default) when {@code argsJson} is given.
 *                  Enqueue fails with {@link InvalidJobException} for {@code args} when no codec is configured
 * @param unique makes the job unique by a key (docs/unique-jobs.md), or null (default) for an ordinary job
 */
public record NewJob(String kind, String queue, @Nullable String argsJson, int priority, int maxAttempts,
                     @Nullable Instant runAt, @Nullable Object typedArgs, @Nullable UniqueOptions unique) {

    /** Default queue name. */
    public static final String DEFAULT_QUEUE = "default";
    /** Default priority. */
    public static final int DEFAULT_PRIORITY = 2;
    /** Default maximum attempts. */
    public static final int DEFAULT_MAX_ATTEMPTS = 25;
    /** Longest queue or kind name. */
    public static final int MAX_NAME_LENGTH = 128;

    /**
     * First instant past the accepted {@code runAt} range (exclusive). Far enough to catch unit mistakes (seconds vs
     * millis) without limiting real schedules; the database's run_at CHECK uses the same half-open range.
     */
    public static final Instant MAX_RUN_AT = Instant.parse("2200-01-01T00:00:00Z");
    /** Earliest accepted {@code runAt} (inclusive), as in the database's run_at CHECK. */
    public static final Instant MIN_RUN_AT = Instant.parse("2000-01-01T00:00:00Z");

    // The one name rule of the API; the database's *_queue_name / *_kind_name CHECKs mirror it.
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0," + (MAX_NAME_LENGTH - 1) + "}");

    /** Validates all fields. */
    public NewJob {
        checkName("kind", kind);
        checkName("queue", queue);
        if (typedArgs != null) {
            if (argsJson != null) {
                throw new InvalidJobException("args", "set either JSON args or typed args, not both");
            }
        } else {
            if (argsJson == null) {
                throw new InvalidJobException("args", "must not be null (use \"{}\")");
            }
            JsonObjectCheck.requireObject(argsJson, "args");
        }
        if (priority < 1 || priority > 4) {
            throw new InvalidJobException("priority", "must be between 1 and 4, got " + priority);
        }
        if (maxAttempts < 1 || maxAttempts > 1000) {
            throw new InvalidJobException("maxAttempts", "must be between 1 and 1000, got " + maxAttempts);
        }
        if (runAt != null && (!runAt.isBefore(MAX_RUN_AT) || runAt.isBefore(MIN_RUN_AT))) {
            throw new InvalidJobException("runAt", runAtRange() + ", got " + runAt);
        }
    }

    /** An ordinary job with JSON args (no typed args, no unique key); validates all fields. */
    public NewJob(String kind, String queue, String argsJson, int priority, int maxAttempts, @Nullable Instant runAt) {
        this(kind, queue, argsJson, priority, maxAttempts, runAt, null, null);
    }

    /**
     * This job with its {@code typedArgs} encoded by {@code codec} into {@code argsJson}; the job itself when it has
     * JSON args already. What the engine does at enqueue.
     *
     * @throws InvalidJobException for {@code args} when the codec fails or its output is not a JSON object
     */
    public NewJob encodeArgs(ArgsCodec codec) {
        if (typedArgs == null) {
            return this;
        }
        String json;
        try {
            json = codec.encode(typedArgs);
        } catch (RuntimeException e) {
            throw new InvalidJobException("args", "the args codec cannot encode " + typedArgs.getClass().getName()
                    + ": " + e.getMessage(), e);
        }
        if (json == null) {
            throw new InvalidJobException("args", "the args codec encoded " + typedArgs.getClass().getName() + " to null");
        }
        return new NewJob(kind, queue, json, priority, maxAttempts, runAt, null, unique);
    }

    /** The {@code runAt} rule in words, for every error that reports it. */
    public static String runAtRange() {
        return "must be at or after " + MIN_RUN_AT + " and before " + MAX_RUN_AT;
    }

    /**
     * Checks a queue or kind name against the one name rule: 1..{@value #MAX_NAME_LENGTH} characters of
     * {@code [A-Za-z0-9_.:-]}, starting with a letter or digit. Every public entry that takes a queue or kind name
     * calls this, so a bad name is refused the same way everywhere instead of reading as an empty queue.
     *
     * @param field {@code "queue"} or {@code "kind"}, reported by {@link InvalidJobException#field()}
     * @return {@code value}, for chaining
     * @throws InvalidJobException naming the field and the (abbreviated) value
     */
    public static String checkName(String field, @Nullable String value) {
        if (value == null) {
            throw new InvalidJobException(field, "must not be null");
        }
        if (!NAME.matcher(value).matches()) {
            throw new InvalidJobException(field, "'" + abbreviate(value) + "' is invalid: 1.." + MAX_NAME_LENGTH
                    + " characters of [A-Za-z0-9_.:-], starting with a letter or digit");
        }
        return value;
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
        private @Nullable String argsJson = "{}";
        private @Nullable Object typedArgs;
        private int priority = DEFAULT_PRIORITY;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private @Nullable Instant runAt;
        private @Nullable UniqueOptions unique;

        private Builder(String kind) {
            this.kind = kind;
        }

        /** Queue name (default {@value NewJob#DEFAULT_QUEUE}). */
        public Builder queue(String queue) {
            this.queue = queue;
            return this;
        }

        /** Arguments as JSON object text (default {@code {}}); replaces {@link #typedArgs(Object)}. */
        public Builder args(String argsJson) {
            this.argsJson = argsJson;
            this.typedArgs = null;
            return this;
        }

        /**
         * Arguments as an object (a record, typically), encoded at enqueue by the engine's {@link ArgsCodec};
         * replaces {@link #args(String)}. Enqueue fails with {@link InvalidJobException} when the engine has no codec.
         */
        public Builder typedArgs(Object args) {
            if (args == null) {
                throw new InvalidJobException("args", "must not be null");
            }
            if (args instanceof CharSequence) {
                throw new InvalidJobException("args", "typed args must be an object, not a string: for JSON text use "
                        + "args(String)");
            }
            this.typedArgs = args;
            this.argsJson = null;
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

        /**
         * Makes the job unique by a key (default: none): a duplicate enqueue returns the id of the job holding the
         * key instead of creating another (docs/unique-jobs.md).
         */
        public Builder unique(@Nullable UniqueOptions unique) {
            this.unique = unique;
            return this;
        }

        /** Validates and builds. */
        public NewJob build() {
            return new NewJob(kind, queue, argsJson, priority, maxAttempts, runAt, typedArgs, unique);
        }
    }
}
