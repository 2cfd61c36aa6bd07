package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.close.CompletionBatcher;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Outcomes that arrive while a completion flush is in flight wait for it and go out together in the next flush,
 * instead of each paying a statement and a commit in a concurrent flush of their own; but never longer than
 * {@code MAX_DEFER_WINDOWS} windows, so a flush that is stuck (here: blocked on the per-attempt advisory lock of its
 * first job, which another session holds) cannot hold other outcomes back (the "completion stall" class of issue #10).
 *
 * <p>The first test fails without the deferral (each outcome, arriving more than a window after the previous one, went
 * out in its own flush: 3 flushes instead of 1). Both fail without the age bound (the later outcomes never became
 * durable while the first flush was blocked).
 */
@RiffleTest
class CompletionCompanyIT {

    @Test
    void outcomesArrivingDuringAFlushShareTheNextOneAndAreNotHeldBeyondTheBound(TestDatabase db) throws Exception {
        // A long window makes the spacing of the submits below deterministic on a loaded machine: each arrives more
        // than two windows after the previous one, yet all within the bound (ten windows) of the first.
        Duration window = Duration.ofMillis(200);
        Riffle riffle = Engines.start(db, b -> b.completionWindow(window).completionFlushConcurrency(4));
        try (Connection holder = db.openJdbc()) {
            Engines.enqueue(riffle, "company", 4);
            List<Job> jobs = riffle.subscribe("company").take(4).collectList().block(Engines.TIMEOUT);
            assertThat(jobs).hasSize(4);
            Job blocked = jobs.get(0);
            CompletionBatcher batcher = Internals.completer(riffle);

            lockAttempt(holder, blocked);
            CompletableFuture<Void> first = blocked.complete().toFuture();
            awaitFlushBlocked(db);
            long flushesBefore = batcher.flushes();

            long t0 = System.nanoTime();
            CompletableFuture<Void> b = jobs.get(1).complete().toFuture();
            Thread.sleep(window.toMillis() * 2 + 50);
            CompletableFuture<Void> c = jobs.get(2).complete().toFuture();
            Thread.sleep(window.toMillis() * 2 + 50);
            CompletableFuture<Void> d = jobs.get(3).complete().toFuture();
            assertThat(b.isDone()).as("an outcome arriving during a flush waited for it (or for the bound)").isFalse();

            CompletableFuture.allOf(b, c, d).get(Engines.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            assertThat(first).as("the blocked flush is still blocked").isNotDone();
            assertThat(batcher.flushes() - flushesBefore)
                    .as("three outcomes spread over %d ms went out in one flush", waitedMs).isEqualTo(1);

            releaseAndAwaitAllCompleted(db, holder, first, "company", 4);
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void withDefaultsABlockedFlushDelaysALaterOutcomeByMillisecondsNotUntilItEnds(TestDatabase db) throws Exception {
        Riffle riffle = Engines.start(db);
        try (Connection holder = db.openJdbc()) {
            Engines.enqueue(riffle, "stuck", 2);
            List<Job> jobs = riffle.subscribe("stuck").take(2).collectList().block(Engines.TIMEOUT);
            assertThat(jobs).hasSize(2);

            lockAttempt(holder, jobs.get(0));
            CompletableFuture<Void> first = jobs.get(0).complete().toFuture();
            awaitFlushBlocked(db);

            // The bound is 20 ms with the default 2 ms window; ten seconds leaves room for any loaded CI machine
            // and is still far shorter than the lock is held (until after this assertion).
            jobs.get(1).complete().block(Duration.ofSeconds(10));
            assertThat(first).isNotDone();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'",
                    jobs.get(1).id())).isEqualTo(1);

            releaseAndAwaitAllCompleted(db, holder, first, "stuck", 2);
        } finally {
            Engines.close(riffle);
        }
    }

    /** Takes the attempt's advisory lock (the one every closer takes first) in a session the test holds. */
    private static void lockAttempt(Connection holder, Job job) throws Exception {
        try (PreparedStatement st = holder.prepareStatement("SELECT pg_advisory_lock(attempt_lock_key(?, ?))")) {
            st.setLong(1, job.id());
            st.setLong(2, job.runLease());
            st.execute();
        }
    }

    /** Lets the blocked flush go; then every job of the queue, counted by id, is completed. */
    private static void releaseAndAwaitAllCompleted(TestDatabase db, Connection holder, CompletableFuture<Void> first,
                                                    String queue, int jobs) throws Exception {
        try (PreparedStatement st = holder.prepareStatement("SELECT pg_advisory_unlock_all()")) {
            st.execute();
        }
        first.get(Engines.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertThat(db.queryLong("SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE queue = ?"
                + " AND state = 'completed'", queue)).isEqualTo(jobs);
    }

    /** Waits until this schema's completion statement waits on an advisory lock: the first flush is stuck. */
    private static void awaitFlushBlocked(TestDatabase db) {
        Engines.awaitTrue("a completion flush waiting on the held attempt lock", () -> db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        + " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
                        + " AND query LIKE '%complete_compact%' AND position(? IN query) > 0", db.schema()) > 0);
    }
}
