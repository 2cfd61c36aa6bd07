package dev.riffle.engine.test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A settable {@link Clock} for {@link dev.riffle.engine.RiffleConfig#clock()}: it stands still until the test moves
 * it with {@link #advance(Duration)} or {@link #set(Instant)}. Thread-safe.
 *
 * <p>What it drives is the engine's <em>local</em> time only: timestamps the engine takes and its elapsed-time checks
 * (how long an attempt has been held, so when it is heartbeated; how long an idle subscription went without a claim,
 * so when the safety poll runs while LISTEN is up; outage durations; {@code RingStatus.lastPruneAt}). Everything the
 * database decides uses the database's clock and is <em>not</em> moved by this clock: whether a job's {@code run_at}
 * is due (enqueue and promotion compare it with {@code now()}/{@code clock_timestamp()}), retry and snooze delays,
 * stale-attempt rescue ages, history and DLQ retention. See docs/testing.md, "What the test clock moves".
 */
public final class TestClock extends Clock {

    private final AtomicReference<Instant> now;
    private final ZoneId zone;

    private TestClock(AtomicReference<Instant> now, ZoneId zone) {
        this.now = now;
        this.zone = zone;
    }

    /** A clock standing at {@code start}, in UTC. */
    public static TestClock at(Instant start) {
        return new TestClock(new AtomicReference<>(Objects.requireNonNull(start, "start")), ZoneOffset.UTC);
    }

    /** A clock standing at the current system time, in UTC. */
    public static TestClock startingNow() {
        return at(Instant.now());
    }

    /**
     * Moves the clock forward.
     *
     * @throws IllegalArgumentException when {@code by} is negative (time only moves forward; the engine's elapsed-time
     *     arithmetic assumes a monotonic clock)
     * @return the new instant
     */
    public Instant advance(Duration by) {
        Objects.requireNonNull(by, "by");
        if (by.isNegative()) {
            throw new IllegalArgumentException("a test clock only moves forward, got " + by);
        }
        return now.updateAndGet(t -> t.plus(by));
    }

    /**
     * Sets the clock to {@code instant}, which must not lie before the current reading.
     *
     * @throws IllegalArgumentException when {@code instant} is before the current reading
     */
    public void set(Instant instant) {
        Objects.requireNonNull(instant, "instant");
        now.updateAndGet(t -> {
            if (instant.isBefore(t)) {
                throw new IllegalArgumentException("a test clock only moves forward: " + instant + " is before " + t);
            }
            return instant;
        });
    }

    @Override
    public Instant instant() {
        return now.get();
    }

    @Override
    public ZoneId getZone() {
        return zone;
    }

    /** The same instant source seen in another zone (advancing either moves both). */
    @Override
    public Clock withZone(ZoneId zone) {
        return new TestClock(now, Objects.requireNonNull(zone, "zone"));
    }

    @Override
    public String toString() {
        return "TestClock[" + now.get() + ", " + zone + "]";
    }
}
