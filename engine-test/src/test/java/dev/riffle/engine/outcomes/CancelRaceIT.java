package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * An operator cancel that overlaps a job's move between places (backlog to ready ring, running to backlog) must
 * still find the job. Each test holds the competing transaction open on its own JDBC connection, so the
 * interleaving is forced, not hoped for: the cancel is started, seen blocked on that transaction's lock in
 * pg_stat_activity, and only then is the competitor committed.
 */
@RiffleTest
class CancelRaceIT extends ProbeIT {
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
            OutcomeKit.holdAttemptLock(blocker, id, job.runLease());
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
    /**
     * Takes the order-running claim head with NOWAIT, trying up to {@code tries} times 20 ms apart inside a savepoint
     * each (the worker's transaction keeps its attempt lock); rethrows the last lock failure.
     */
    private static void headRowFreeWithin(Connection worker, int tries) throws Exception {
        java.sql.SQLException last = null;
        for (int i = 0; i < tries; i++) {
            java.sql.Savepoint sp = worker.setSavepoint();
            try (Statement st = worker.createStatement()) {
                st.execute("SELECT 1 FROM queue_claim_heads WHERE queue = 'order-running' FOR UPDATE NOWAIT");
                return;
            } catch (java.sql.SQLException e) {
                if (!"55P03".equals(e.getSQLState())) {
                    throw e;
                }
                last = e;
                worker.rollback(sp);
                Thread.sleep(20);
            }
        }
        throw last;
    }

    /** Waits until {@code n} statements of this schema that mention {@code fragment} wait on an advisory lock. */
    private void awaitAdvisoryWaiters(String fragment, int n) {
        String needle = db.schema() + "\"." + fragment;
        await(n + " statement(s) waiting on an advisory lock in " + fragment, () -> db.queryLong("SELECT count(*) "
                + "FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' "
                + "AND position(? in query) > 0", needle) == n);
    }

    /**
     * Advisory locks come before row locks, on every path: a session that holds a running attempt's lock (as a
     * completion, heartbeat or rescue does while it works) may go on to lock that lane's claim head. A cancel that
     * took the claim head first and then queued on the attempt lock closed a cycle with it: a deadlock, one side
     * aborted with 40P01. The competing session here takes the two locks in the project's order, by hand, while
     * the cancel is seen waiting on the attempt lock; it must get the head row, and the cancel must then finish.
     */
    @Test
    void aCancelWaitingOnARunningAttemptsLockHoldsNoClaimHeadRowLock() throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Job> held = new ConcurrentLinkedQueue<>();
        Disposable sub = riffle.subscribe("order-running").subscribe(held::add);
        try (Connection worker = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("order-running").build());
            await("delivery", () -> held.size() == 1);
            Job job = held.peek();

            OutcomeKit.holdAttemptLock(worker, id, job.runLease());
            CompletableFuture<CancelResult> cancel = riffle.admin().cancel(id).toFuture();
            awaitAdvisoryWaiters("cancel_job", 1);

            // NOWAIT: the row must be free while the cancel waits. Waiting for it instead would close the cycle and
            // PostgreSQL would abort one side with 40P01 after deadlock_timeout (the cancel, as the older waiter),
            // which the admin API's conflict retry would then hide from this test. The subscription's own claims and
            // cursor advances lock the head for a few milliseconds at a time, so a few tries are allowed; a cancel
            // that held the row would hold it through every one of them.
            assertThatCode(() -> headRowFreeWithin(worker, 50))
                    .as("the claim head row, taken while the cancel waits on the attempt lock").doesNotThrowAnyException();
            worker.rollback();

            assertThat(cancel.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id)).isEqualTo(1);
        } finally {
            sub.dispose();
            OutcomeKit.close(riffle);
        }
    }

    /**
     * The same order on the ready branch: the cancel of a ready job first takes the lock of the attempt a claim
     * would create (run lease + 1), then the claim head. So a claim that commits while the cancel waits produces an
     * attempt whose lock the cancel already holds, and the cancel closes it without taking an advisory lock after
     * the row lock.
     */
    @Test
    void aCancelOfAReadyJobTakesTheAttemptLockBeforeTheClaimHeadAndCancelsAClaimThatWinsTheRace() throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        try (Connection claimer = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("order-ready").build());

            claimer.setAutoCommit(false);
            try (PreparedStatement ps = claimer.prepareStatement("SELECT pg_advisory_xact_lock(attempt_lock_key(?, 1))")) {
                ps.setLong(1, id);
                ps.execute();
            }
            CompletableFuture<CancelResult> cancel = riffle.admin().cancel(id).toFuture();
            awaitAdvisoryWaiters("cancel_job", 1);
            // The claim locks the head with SKIP LOCKED: had the cancel held it, this would claim nothing.
            try (PreparedStatement ps = claimer.prepareStatement("SELECT status, job_id, run_lease "
                    + "FROM claim_ready(ARRAY['order-ready'], ARRAY[0], 1)"); ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString("status")).isEqualTo("claimed");
                assertThat(rs.getLong("job_id")).isEqualTo(id);
                assertThat(rs.getLong("run_lease")).isEqualTo(1);
            }
            claimer.commit();

            assertThat(cancel.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id)).isEqualTo(1);
            assertThat(closuresOf(db, id, 1)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
