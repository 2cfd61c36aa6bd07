package dev.riffle.engine.internal.time;

import java.time.Clock;
import java.time.Instant;

/**
 * The engine's one local clock ({@code RiffleConfig.clock()}), read by all machinery instead of
 * {@code System.nanoTime()} or {@code Instant.now()}, so a test can drive every local timeout and age in virtual time.
 * With the system clock, elapsed time comes from the monotonic {@code System.nanoTime()}: a wall-clock step (NTP)
 * must not make a live attempt look old or a fresh one young. Any other clock is read for elapsed time too.
 */
public final class EngineClock {
    private final Clock clock;
    private final boolean system;

    private EngineClock(Clock clock) {
        this.clock = clock;
        this.system = clock.equals(Clock.systemUTC()) || clock.equals(Clock.systemDefaultZone());
    }

    /** Wraps {@code clock}. */
    public static EngineClock of(Clock clock) {
        return new EngineClock(clock);
    }

    /** The system clock; for machinery built outside an engine (tools, tests). */
    public static EngineClock system() {
        return new EngineClock(Clock.systemUTC());
    }

    /** Monotonic nanoseconds for elapsed-time arithmetic only (compare with subtraction, never with {@code <}). */
    public long nanos() {
        if (system) {
            return System.nanoTime();
        }
        Instant now = clock.instant();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** The current instant. */
    public Instant instant() {
        return clock.instant();
    }

    /** The wrapped clock, for APIs that take a {@link Clock}. */
    public Clock clock() {
        return clock;
    }
}
