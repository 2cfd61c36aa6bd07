package dev.riffle.engine.api;

import java.time.Duration;
import java.util.Objects;

/**
 * A queue's exponential retry backoff, recorded in the schema ({@code queue_meta}) at engine start so that every
 * engine's retries and every rescue of the queue use it (docs/configuration.md#retry-backoff). The delay after
 * attempt {@code n} (1-based) is
 * <pre>{@code least(cap, base * 2^(n - 1) * (1 + U[0, jitter]))}</pre>
 * computed by the database ({@code retry_backoff} in {@code R__40_close.sql}). A queue with no policy keeps the
 * built-in backoff, which is {@link #builtIn()}: base 2 s, cap 24 h, jitter 0.25.
 *
 * @param base delay after the first attempt, before jitter; {@value #MIN_MILLIS} ms to {@link JobOutcome#MAX_DELAY}
 * @param cap longest delay, jitter included; at least {@code base}, at most {@link JobOutcome#MAX_DELAY}
 * @param jitter random extra share of each delay, 0 (none) to 1 (up to double)
 */
public record BackoffPolicy(Duration base, Duration cap, double jitter) {

    /** Shortest accepted base: {@value} ms (the schema stores milliseconds). */
    public static final long MIN_MILLIS = 1;

    /** Validates. */
    public BackoffPolicy {
        Objects.requireNonNull(base, "base");
        Objects.requireNonNull(cap, "cap");
        if (base.toMillis() < MIN_MILLIS || base.compareTo(JobOutcome.MAX_DELAY) > 0) {
            throw new IllegalArgumentException("backoff base must be between " + MIN_MILLIS + " ms and "
                    + JobOutcome.MAX_DELAY + ", got " + base);
        }
        if (cap.compareTo(base) < 0 || cap.compareTo(JobOutcome.MAX_DELAY) > 0) {
            throw new IllegalArgumentException("backoff cap must be between the base (" + base + ") and "
                    + JobOutcome.MAX_DELAY + ", got " + cap);
        }
        if (!(jitter >= 0 && jitter <= 1)) {
            throw new IllegalArgumentException("backoff jitter must be between 0 and 1, got " + jitter);
        }
    }

    /** The built-in backoff a queue without a policy gets: 2 s doubling per attempt, +0..25 %, capped at 24 h. */
    public static BackoffPolicy builtIn() {
        return new BackoffPolicy(Duration.ofSeconds(2), Duration.ofHours(24), 0.25);
    }
}
