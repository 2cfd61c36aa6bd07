package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * An operator cancel that overlaps a job's move between places (backlog to ready ring, running to backlog) must
 * still find the job. Each test holds the competing transaction open on its own JDBC connection, so the
 * interleaving is forced, not hoped for: the cancel is started, seen blocked on that transaction's lock in
 * pg_stat_activity, and only then is the competitor committed.
 */
@RiffleTest
class CancelRaceIT {
    private Probe db;
    private TestDatabase database;

    @BeforeEach
    void openProbe(TestDatabase database) {
        this.database = database;
        db = Probe.open(database);
    }

    @AfterEach
    void closeProbe() {
        db.close();
    }

    /** Waits until {@code n} engine statements of this schema that mention {@code fragment} wait on a lock. */
    private void awaitLockWaiters(String fragment, int n) {
        String needle = db.schema() + "\"." + fragment;
        await(n + " statement(s) blocked in " + fragment, () -> db.queryLong("SELECT count(*) FROM pg_stat_activity "
                + "WHERE wait_event_type = 'Lock' AND position(? in query) > 0", needle) == n);
    }

    @Test
    void aCancelOverlappingThePromotionOfItsJobStillCancelsIt() throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        try (Connection promoter = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("race-promote")
                    .runAt(Instant.now().plus(Duration.ofHours(1))).build());
            db.execute("UPDATE deferred_jobs SET run_at = now() - interval '1 second' WHERE job_id = ?", id);

            // Promotion moves the job into the ready ring but has not committed yet.
            promoter.setAutoCommit(false);
            try (PreparedStatement ps = promoter.prepareStatement("SELECT promote_due(100)"); ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(1)).isEqualTo(1);
            }
            CompletableFuture<CancelResult> cancel = riffle.admin().cancel(id).toFuture();
            awaitLockWaiters("cancel_job", 1);
            promoter.commit();

            CancelResult result = cancel.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            // The job was live throughout: scheduled when the cancel began, ready when it ended. NOT_FOUND would
            // mean the cancel was lost and the job runs anyway.
            assertThat(result).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
            assertThat(riffle.counts("race-promote").block(TIMEOUT).available()).as("left claimable").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id)).isEqualTo(1);
            assertThat(claimsOf(db, id)).isZero();
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aCancelOverlappingTheRetryOfItsRunningJobStillCancelsIt() throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Job> held = new ConcurrentLinkedQueue<>();
        Disposable sub = riffle.subscribe("race-retry").subscribe(held::add);
        try (Connection blocker = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("race-retry").build());
            await("delivery", () -> held.size() == 1);
            Job job = held.peek();

            // Hold the attempt's lock so the handler's retry queues behind it, then the cancel behind the retry.
            blocker.setAutoCommit(false);
            try (PreparedStatement ps = blocker.prepareStatement("SELECT pg_advisory_xact_lock(attempt_lock_key(?, ?))")) {
                ps.setLong(1, id);
                ps.setLong(2, job.runLease());
                ps.execute();
            }
            CompletableFuture<Void> retry = job.retry("boom", Duration.ofMinutes(5)).toFuture();
            awaitLockWaiters("close_attempts", 1);
            CompletableFuture<CancelResult> cancel = riffle.admin().cancel(id).toFuture();
            await("cancel queued on the attempt lock", () -> db.queryLong("SELECT count(*) FROM pg_stat_activity "
                    + "WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND position(? in query) > 0",
                    db.schema() + "\".") == 2);
            blocker.commit();

            retry.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            CancelResult result = cancel.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            // The retry won the attempt, so the job sits in the backlog as retryable: that is where the cancel must
            // find it. NOT_FOUND would leave it to run again in five minutes.
            assertThat(result).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).as("left in the backlog").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id)).isEqualTo(1);
        } finally {
            sub.dispose();
            OutcomeKit.close(riffle);
        }
    }
}
