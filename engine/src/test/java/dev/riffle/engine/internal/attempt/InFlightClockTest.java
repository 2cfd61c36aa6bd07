package dev.riffle.engine.internal.attempt;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.internal.time.EngineClock;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Attempt age is judged by the engine's injected clock (RiffleConfig.clock()), so a test can move it in virtual time:
 * a clock reading a {@link VirtualTimeScheduler} makes an attempt a heartbeat candidate exactly when virtual time
 * passes the interval, whatever the wall clock does.
 */
class InFlightClockTest {

    /** A clock that reads the virtual time of {@code vts}, in {@code zone}. */
    private static Clock virtual(VirtualTimeScheduler vts, ZoneId zone) {
        return new Clock() {
            @Override public ZoneId getZone() { return zone; }
            @Override public Clock withZone(ZoneId other) { return virtual(vts, other); }
            @Override public Instant instant() { return Instant.ofEpochMilli(vts.now(TimeUnit.MILLISECONDS)); }
        };
    }

    private static ClaimedJob job(long id, long deliveredNanos) {
        AttemptCloser closer = new AttemptCloser() {
            @Override public Mono<Void> finish(Receipt r, dev.riffle.engine.api.JobOutcome o, boolean leased) { return Mono.empty(); }
            @Override public Mono<Void> release(Receipt r, boolean leased) { return Mono.empty(); }
        };
        AttemptServices services = new AttemptServices(closer, jobs -> Mono.just(0), (j, t) -> Mono.empty());
        return new ClaimedJob(id, 1, 1, 3, "k", "q", 0, "{}", Instant.EPOCH, Instant.EPOCH, null,
                new Receipt(0, 1, 1, id, id, 1), services, null, deliveredNanos);
    }

    @Test
    void heartbeatCandidatesFollowVirtualTime() {
        VirtualTimeScheduler vts = VirtualTimeScheduler.create();
        try {
            EngineClock clock = EngineClock.of(virtual(vts, ZoneOffset.UTC));
            InFlight inFlight = new InFlight(clock);
            inFlight.add(job(7, clock.nanos()));
            Duration interval = Duration.ofMinutes(10);

            vts.advanceTimeBy(interval.minusSeconds(1));
            assertThat(inFlight.heldLongerThan(interval)).as("younger than the interval in virtual time").isEmpty();

            vts.advanceTimeBy(Duration.ofSeconds(1));
            assertThat(inFlight.heldLongerThan(interval)).extracting(ClaimedJob::id).isEqualTo(List.of(7L));
        } finally {
            vts.dispose();
        }
    }

    @Test
    void theSystemClockMeasuresElapsedTimeMonotonically() {
        EngineClock system = EngineClock.of(Clock.systemUTC());
        long a = system.nanos();
        long b = system.nanos();
        assertThat(b - a).isNotNegative();
        assertThat(Math.abs(a - System.nanoTime())).as("backed by System.nanoTime()").isLessThan(TimeUnit.SECONDS.toNanos(5));
    }
}
