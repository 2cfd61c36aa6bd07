package dev.riffle.engine.api;

import java.time.Duration;
import java.util.Objects;

/**
 * A per-queue token-bucket rate limit on claims, held across every engine on the schema (docs/limits.md): the queue
 * gains {@code jobs} tokens per {@code period}, holds at most {@code burst}, and each claimed job takes one. Each
 * engine subscribing to the queue keeps its own bucket, refilled at its share of the rate (one over the number of
 * engines holding a live lease on the queue), so the engines together claim at most
 * {@code burst + jobs * elapsed / period} jobs in any interval, plus the slack docs/limits.md lists.
 *
 * @param jobs tokens gained per period, 1 to {@value #MAX_JOBS}; 0 only in {@link #NONE}
 * @param period the refill period, 1 ms to 1 day
 * @param burst the bucket's capacity: jobs claimable at once after an idle spell, 1 to {@value #MAX_JOBS}
 */
public record RateLimit(int jobs, Duration period, int burst) {

    /** Largest {@code jobs} and {@code burst} accepted: {@value} (the schema's CHECK). */
    public static final int MAX_JOBS = 1_000_000;

    /** Longest period accepted: one day (the schema's CHECK). */
    public static final Duration MAX_PERIOD = Duration.ofDays(1);

    /** "No rate limit": recorded as none at engine start ({@link QueueConfig#withRateLimit(RateLimit)}). */
    public static final RateLimit NONE = new RateLimit(0, Duration.ofSeconds(1), 0);

    /** Validates. */
    public RateLimit {
        Objects.requireNonNull(period, "period");
        boolean none = jobs == 0 && burst == 0;
        if (!none && (jobs < 1 || jobs > MAX_JOBS)) {
            throw new IllegalArgumentException("rate limit jobs must be between 1 and " + MAX_JOBS + ", got " + jobs);
        }
        if (!none && (burst < 1 || burst > MAX_JOBS)) {
            throw new IllegalArgumentException("rate limit burst must be between 1 and " + MAX_JOBS + ", got " + burst);
        }
        if (period.toMillis() < 1 || period.compareTo(MAX_PERIOD) > 0) {
            throw new IllegalArgumentException("rate limit period must be between 1 ms and " + MAX_PERIOD + ", got "
                    + period);
        }
    }

    /** At most {@code jobs} per {@code period}, with a burst of {@code jobs}. */
    public static RateLimit of(int jobs, Duration period) {
        return new RateLimit(jobs, period, jobs);
    }

    /** Whether this is {@link #NONE}. */
    public boolean isNone() {
        return jobs == 0;
    }
}
