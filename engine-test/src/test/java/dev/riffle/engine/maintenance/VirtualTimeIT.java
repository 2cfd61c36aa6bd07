package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * The injected {@code RiffleConfig.scheduler()} and {@code clock()} drive the engine's timers and ages: with a
 * {@link VirtualTimeScheduler} and a clock reading it, a held attempt gets its heartbeat only once virtual time has
 * passed the heartbeat interval (ten minutes, which real time never reaches during the test), and a completion waits
 * for the virtual completion window. An engine that timed on its own scheduler or aged attempts by {@code nanoTime}
 * would never write the heartbeat here.
 *
 * <p>Not on virtual time: the R2DBC pool's timers (acquire timeout, idle eviction) and the grace timeouts of
 * {@code close()} use Reactor's default scheduler, and the database judges its own state by its own clock.
 */
@RiffleTest
class VirtualTimeIT {

    private static final Duration BEAT = Duration.ofMinutes(10);
    private static final Duration WINDOW = Duration.ofSeconds(30);
    /** Small virtual steps, so claims, cursor advances and flushes see their short timers fire as they would live. */
    private static final Duration STEP = Duration.ofMillis(10);
    /** Real-time bound on each wait; far below BEAT, so only virtual time can produce a heartbeat. */
    private static final Duration REAL_BOUND = Duration.ofSeconds(20);
    /** Real time given to the database to show that nothing happens while virtual time stands still. */
    private static final Duration QUIET = Duration.ofSeconds(1);

    /** Reads the scheduler's virtual time, offset to the wall time at creation so instants look ordinary. */
    private static final class VirtualClock extends Clock {
        private final VirtualTimeScheduler vts;
        private final Instant origin;
        private final ZoneId zone;

        VirtualClock(VirtualTimeScheduler vts, Instant origin) {
            this(vts, origin, ZoneOffset.UTC);
        }

        private VirtualClock(VirtualTimeScheduler vts, Instant origin, ZoneId zone) {
            this.vts = vts;
            this.origin = origin;
            this.zone = zone;
        }

        @Override
        public Instant instant() {
            return origin.plusNanos(vts.now(TimeUnit.NANOSECONDS));
        }

        @Override
        public ZoneId getZone() {
            return zone;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return new VirtualClock(vts, origin, zone);
        }
    }

    @Test
    void heartbeatAndCompletionWindowRunOnTheInjectedSchedulerAndClock(TestDatabase db) {
        VirtualTimeScheduler vts = VirtualTimeScheduler.create();
        Riffle riffle = Fixtures.manual(db, b -> b.scheduler(vts).clock(new VirtualClock(vts, Instant.now()))
                .completionWindow(WINDOW)
                .maintenance(MaintenanceConfig.builder().enabled(false)
                        .heartbeatInterval(BEAT).staleAfter(BEAT.multipliedBy(3)).build()));
        try {
            Fixtures.enqueue(riffle, "vt", 1);
            long claimFrom = vts.now(TimeUnit.NANOSECONDS);
            CompletableFuture<Job> claimed = riffle.subscribe("vt").next().toFuture();
            advanceUntil(vts, "job delivered", claimed::isDone);
            Job job = claimed.join();
            long claimTo = vts.now(TimeUnit.NANOSECONDS);

            // Up to just short of one interval after the earliest possible delivery: no heartbeat evidence, however
            // long the database is given (a heartbeat tick may run here, but finds the attempt younger than BEAT).
            advanceTo(vts, claimFrom + BEAT.minus(STEP).toNanos());
            Fixtures.pause(QUIET);
            assertThat(attemptState(db, job)).as("heartbeat before the virtual interval had passed").isZero();

            // One more interval: some tick is now at least BEAT after delivery and records the evidence.
            advanceTo(vts, claimTo + BEAT.multipliedBy(2).toNanos());
            if (!dev.riffle.engine.test.Await.within(REAL_BOUND, () -> attemptState(db, job) == 1)) {
                fail("no heartbeat for the held attempt after virtual time passed twice the heartbeat interval");
            }

            // The completion is buffered until the virtual completion window closes.
            CompletableFuture<Void> completed = job.complete().toFuture();
            advanceTo(vts, vts.now(TimeUnit.NANOSECONDS) + WINDOW.minus(STEP).toNanos());
            Fixtures.pause(QUIET);
            assertThat(completed).as("completion flushed before its virtual window closed").isNotDone();
            assertThat(terminal(db, job)).isZero();
            advanceUntil(vts, "completion flushed", completed::isDone);
            completed.join();
            assertThat(terminal(db, job)).isEqualTo(1);
            assertThat(attemptState(db, job)).as("evidence removed with the attempt").isZero();
        } finally {
            CompletableFuture<Void> closed = riffle.close().toFuture();
            advanceUntil(vts, "engine closed", closed::isDone);
            vts.dispose();
        }
    }

    private static long attemptState(TestDatabase db, Job job) {
        return db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ? AND run_lease = ?", job.id(), job.runLease());
    }

    private static long terminal(TestDatabase db, Job job) {
        return db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'", job.id());
    }

    /** Moves virtual time to {@code nanos} in one go: every task due on the way runs at its own virtual instant. */
    private static void advanceTo(VirtualTimeScheduler vts, long nanos) {
        long now = vts.now(TimeUnit.NANOSECONDS);
        if (nanos > now) {
            vts.advanceTimeBy(Duration.ofNanos(nanos - now));
        }
    }

    /**
     * Advances virtual time by {@link #STEP} at a time, with a real pause between steps so the database round trips
     * the timers start can finish, until {@code done} holds; bounded in real time.
     */
    private static void advanceUntil(VirtualTimeScheduler vts, String what, BooleanSupplier done) {
        long deadline = System.nanoTime() + REAL_BOUND.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + REAL_BOUND + " of real time waiting for: " + what);
            }
            vts.advanceTimeBy(STEP);
            Fixtures.pause(Duration.ofMillis(2));
        }
    }
}
