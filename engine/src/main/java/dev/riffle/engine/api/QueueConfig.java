package dev.riffle.engine.api;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-queue settings known to the engine process.
 *
 * @param name queue name
 * @param deadline hard deadline of every attempt claimed from this queue; {@link Duration#ZERO} (the default)
 *                 means no deadline, and the claim batch's {@code deadline_at} is NULL
 * @param dlq whether terminal failures of this queue go to the DLQ; null means the engine default. An explicit value
 *            is recorded in the schema at engine start and applied by every engine's exits (the last engine to
 *            start wins; docs/design/delivery-contract.md)
 * @param materialize whether claims of this queue materialize at claim time into a mutable lease (a
 *                    {@code leases} row plus a row-local receipt) instead of a compact claim batch. Default false:
 *                    short jobs should stay compact. Turn it on for queues whose attempts run long or wait for
 *                    external callbacks; compact attempts still materialize on demand when they register one.
 * @param enqueueShards how many lanes per priority this queue's jobs are spread over, 1 to {@value #MAX_ENQUEUE_SHARDS};
 *                      null (the default) keeps the count recorded in the schema (a new queue gets the schema
 *                      default, 8). Each shard is claimed independently, so more shards let more claims of the queue
 *                      run at once, at the price of FIFO order holding per shard rather than across the queue. An
 *                      explicit value is recorded at engine start (the last engine to start wins) and applies to
 *                      jobs enqueued from then on; jobs already enqueued on other shards are still claimed
 *                      (docs/design/delivery-contract.md#enqueue-shards)
 * @param backoff the queue's retry backoff; null (the default) keeps what the schema has recorded (a new queue:
 *                the built-in {@link BackoffPolicy#builtIn()}). An explicit value is recorded at engine start (the
 *                last engine to start wins) and used by every engine's retries and rescues of the queue
 *                (docs/configuration.md#retry-backoff)
 * @param backoffFunction a retry delay computed by this engine for its handlers' retries without a delay; null (the
 *                        default) for none. Takes precedence over {@code backoff} for those retries only (see
 *                        {@link BackoffFunction})
 * @param concurrencyLimit at most this many running attempts of the queue across every engine on the schema
 *                         (docs/limits.md); null (the default) keeps what the schema has recorded (a new queue: no
 *                         limit), 0 records "no limit". An explicit value is recorded at engine start (the last engine
 *                         to start wins) and every engine subscribing to the queue holds it
 * @param rateLimit a token-bucket rate limit on claims of the queue across every engine on the schema
 *                  (docs/limits.md); null (the default) keeps what the schema has recorded (a new queue: none),
 *                  {@link RateLimit#NONE} records "no limit"; recorded at engine start like {@code concurrencyLimit}
 * @param priorityAging a job of the queue waiting longer than this step is claimed as if one priority higher, per
 *                      step, up to priority 1, without rewriting stored rows (docs/limits.md#priority-aging); null
 *                      (the default) keeps what the schema has recorded (a new queue: no aging),
 *                      {@link Duration#ZERO} records "no aging"
 */
public record QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq,
                          boolean materialize, @org.jspecify.annotations.Nullable Integer enqueueShards,
                          @org.jspecify.annotations.Nullable BackoffPolicy backoff,
                          @org.jspecify.annotations.Nullable BackoffFunction backoffFunction,
                          @org.jspecify.annotations.Nullable Integer concurrencyLimit,
                          @org.jspecify.annotations.Nullable RateLimit rateLimit,
                          @org.jspecify.annotations.Nullable Duration priorityAging) {

    /** Largest concurrency limit a queue accepts: {@value} (the schema's CHECK). */
    public static final int MAX_CONCURRENCY_LIMIT = 1_000_000;

    /** Shortest priority aging step: {@value} ms. */
    public static final long MIN_PRIORITY_AGING_MILLIS = 1;

    /** Longest priority aging step: 365 days (the schema's CHECK). */
    public static final Duration MAX_PRIORITY_AGING = Duration.ofDays(365);

    /** Largest shard count a queue accepts: {@value} (the schema's CHECK). */
    public static final int MAX_ENQUEUE_SHARDS = 64;

    /** Validates. */
    public QueueConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(deadline, "deadline");
        NewJob.checkName("queue", name);
        if (deadline.isNegative()) {
            throw new IllegalArgumentException("deadline must not be negative: " + deadline);
        }
        if (!deadline.isZero() && deadline.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("deadline must be zero (none) or at least 1 s: " + deadline);
        }
        if (deadline.compareTo(Duration.ofDays(7)) > 0) {
            throw new IllegalArgumentException("deadline must be at most 7 days: " + deadline);
        }
        if (enqueueShards != null && (enqueueShards < 1 || enqueueShards > MAX_ENQUEUE_SHARDS)) {
            throw new IllegalArgumentException("enqueueShards must be between 1 and " + MAX_ENQUEUE_SHARDS + ", got "
                    + enqueueShards);
        }
        if (concurrencyLimit != null && (concurrencyLimit < 0 || concurrencyLimit > MAX_CONCURRENCY_LIMIT)) {
            throw new IllegalArgumentException("concurrencyLimit must be between 0 (none) and " + MAX_CONCURRENCY_LIMIT
                    + ", got " + concurrencyLimit);
        }
        if (priorityAging != null && !priorityAging.isZero() && (priorityAging.toMillis() < MIN_PRIORITY_AGING_MILLIS
                || priorityAging.compareTo(MAX_PRIORITY_AGING) > 0)) {
            throw new IllegalArgumentException("priorityAging must be zero (none) or between 1 ms and "
                    + MAX_PRIORITY_AGING + ", got " + priorityAging);
        }
    }

    /** A queue with the recorded limits and aging. */
    public QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq,
                       boolean materialize, @org.jspecify.annotations.Nullable Integer enqueueShards,
                       @org.jspecify.annotations.Nullable BackoffPolicy backoff,
                       @org.jspecify.annotations.Nullable BackoffFunction backoffFunction) {
        this(name, deadline, dlq, materialize, enqueueShards, backoff, backoffFunction, null, null, null);
    }

    /** A queue with the recorded (or built-in) backoff. */
    public QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq,
                       boolean materialize, @org.jspecify.annotations.Nullable Integer enqueueShards) {
        this(name, deadline, dlq, materialize, enqueueShards, null, null);
    }

    /** A queue that keeps its recorded shard count. */
    public QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq,
                       boolean materialize) {
        this(name, deadline, dlq, materialize, null);
    }

    /** A compact (not materialized) queue. */
    public QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq) {
        this(name, deadline, dlq, false);
    }

    /** A queue with no deadline. */
    public static QueueConfig of(String name) {
        return new QueueConfig(name, Duration.ZERO, null);
    }

    /** A queue whose attempts expire after {@code deadline}. */
    public static QueueConfig withDeadline(String name, Duration deadline) {
        return new QueueConfig(name, deadline, null);
    }

    /** The same queue with its DLQ policy set. */
    public QueueConfig withDlq(boolean enabled) {
        return new QueueConfig(name, deadline, enabled, materialize, enqueueShards, backoff, backoffFunction,
                concurrencyLimit, rateLimit, priorityAging);
    }

    /** The same queue with claim-time lease materialization on. */
    public QueueConfig withMaterializedLeases() {
        return new QueueConfig(name, deadline, dlq, true, enqueueShards, backoff, backoffFunction,
                concurrencyLimit, rateLimit, priorityAging);
    }

    /** The same queue spread over {@code shards} lanes per priority. */
    public QueueConfig withEnqueueShards(int shards) {
        return new QueueConfig(name, deadline, dlq, materialize, shards, backoff, backoffFunction,
                concurrencyLimit, rateLimit, priorityAging);
    }

    /** The same queue with this retry backoff, recorded in the schema at start. */
    public QueueConfig withBackoff(BackoffPolicy policy) {
        return new QueueConfig(name, deadline, dlq, materialize, enqueueShards,
                Objects.requireNonNull(policy, "policy"), backoffFunction, concurrencyLimit, rateLimit, priorityAging);
    }

    /**
     * The same queue with the retry backoff {@code least(cap, base * 2^(attempt - 1) * (1 + U[0, jitter]))};
     * see {@link BackoffPolicy}.
     *
     * @throws IllegalArgumentException when a value is out of range
     */
    public QueueConfig withBackoff(Duration base, Duration cap, double jitter) {
        return withBackoff(new BackoffPolicy(base, cap, jitter));
    }

    /** The same queue with a retry delay computed by this engine for its handlers' retries; see {@link BackoffFunction}. */
    public QueueConfig withBackoffFunction(BackoffFunction function) {
        return new QueueConfig(name, deadline, dlq, materialize, enqueueShards, backoff,
                Objects.requireNonNull(function, "function"), concurrencyLimit, rateLimit, priorityAging);
    }

    /**
     * The same queue with at most {@code limit} running attempts across every engine on the schema, recorded at
     * start (docs/limits.md); 0 records "no limit".
     *
     * @throws IllegalArgumentException when {@code limit} is negative or above {@value #MAX_CONCURRENCY_LIMIT}
     */
    public QueueConfig withConcurrencyLimit(int limit) {
        return new QueueConfig(name, deadline, dlq, materialize, enqueueShards, backoff, backoffFunction, limit,
                rateLimit, priorityAging);
    }

    /** The same queue with this rate limit across every engine on the schema, recorded at start (docs/limits.md). */
    public QueueConfig withRateLimit(RateLimit limit) {
        return new QueueConfig(name, deadline, dlq, materialize, enqueueShards, backoff, backoffFunction,
                concurrencyLimit, Objects.requireNonNull(limit, "limit"), priorityAging);
    }

    /**
     * The same queue with at most {@code jobs} claims per {@code period} across every engine on the schema, and at
     * most {@code burst} at once; see {@link RateLimit}.
     *
     * @throws IllegalArgumentException when a value is out of range
     */
    public QueueConfig withRateLimit(int jobs, Duration period, int burst) {
        return withRateLimit(new RateLimit(jobs, period, burst));
    }

    /**
     * The same queue with priority aging: a job waiting longer than {@code step} is claimed as if one priority
     * higher, per step, up to priority 1 (docs/limits.md#priority-aging); {@link Duration#ZERO} records "no aging".
     *
     * @throws IllegalArgumentException when {@code step} is negative, under 1 ms or over 365 days
     */
    public QueueConfig withPriorityAging(Duration step) {
        return new QueueConfig(name, deadline, dlq, materialize, enqueueShards, backoff, backoffFunction,
                concurrencyLimit, rateLimit, Objects.requireNonNull(step, "step"));
    }
}
