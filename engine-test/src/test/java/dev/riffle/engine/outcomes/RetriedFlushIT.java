package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A completion flush that is retried after its backend died must not report "done" when someone else closed the
 * attempt in between (issue #10 item 3). The interleaving is forced: a JDBC session holds the attempt's lock, the
 * worker's flush queues on it, an operator cancel queues behind the flush, the flush's backend is terminated, its
 * retry queues behind the cancel, and only then is the lock released. The cancel closes the attempt first; the
 * retried flush must then answer {@link AttemptRejectedException}, and the database must say cancelled.
 */
@RiffleTest
class RetriedFlushIT extends ProbeIT {
    /** Backends of this schema waiting on an advisory lock in {@code function}. */
    private List<Long> waiting(String function) {
        return db.queryRows("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
                        + " AND position(? in query) > 0", db.schema() + "\"." + function)
                .stream().map(r -> OutcomeKit.asLong(r.get("pid"))).toList();
    }

    /** The one backend waiting in {@code function}, once it is the only one and is not {@code notPid}. */
    private long awaitOneWaiter(String what, String function, long notPid) {
        long[] pid = new long[1];
        await(what, () -> {
            List<Long> w = waiting(function);
            if (w.size() == 1 && w.get(0) != notPid) {
                pid[0] = w.get(0);
                return true;
            }
            return false;
        });
        return pid[0];
    }

    private void cancelWinsAgainstARetriedFlush(String queue, String function, Function<Job, Mono<Void>> outcome)
            throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        try (Connection blocker = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue(queue).build());
            Job job = riffle.subscribe(queue).blockFirst(TIMEOUT);
            assertThat(job.id()).isEqualTo(id);

            OutcomeKit.holdAttemptLock(blocker, id, job.runLease());
            CompletableFuture<Void> done = outcome.apply(job).toFuture();
            long firstTry = awaitOneWaiter("the flush waits on the attempt lock", function, -1);
            CompletableFuture<CancelResult> cancel = riffle.admin().cancel(id).toFuture();
            await("the cancel queues behind the flush", () -> waiting("cancel_job").size() == 1);

            assertThat(db.queryLong("SELECT count(*) FROM (SELECT pg_terminate_backend(?::int)) t", firstTry)).isEqualTo(1);
            // The retry reconnects and queues behind the cancel.
            awaitOneWaiter("the retried flush queues behind the cancel", function, firstTry);
            blocker.commit();

            assertThat(cancel.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            Throwable answer = null;
            try {
                done.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                answer = e.getCause();
            }
            assertThat(answer).as("what the worker was told after the cancel closed its attempt")
                    .isInstanceOfSatisfying(AttemptRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id))
                    .as("the database says cancelled").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aRetriedCompletionAfterAnOperatorCancelIsRejected() throws Exception {
        cancelWinsAgainstARetriedFlush("rf-complete", "complete_compact", Job::complete);
    }

    @Test
    void aRetriedRetryAfterAnOperatorCancelIsRejected() throws Exception {
        cancelWinsAgainstARetriedFlush("rf-retry", "close_attempts", j -> j.retry("boom", Duration.ofMinutes(5)));
    }

    @Test
    void aRetriedCompletionThatNobodyRacedSucceeds() throws Exception {
        Riffle riffle = OutcomeKit.start(db);
        try (Connection blocker = database.openJdbc()) {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("rf-alone").build());
            Job job = riffle.subscribe("rf-alone").blockFirst(TIMEOUT);
            OutcomeKit.holdAttemptLock(blocker, id, job.runLease());
            CompletableFuture<Void> done = job.complete().toFuture();
            long firstTry = awaitOneWaiter("the flush waits on the attempt lock", "complete_compact", -1);
            db.queryLong("SELECT count(*) FROM (SELECT pg_terminate_backend(?::int)) t", firstTry);
            awaitOneWaiter("the retried flush waits again", "complete_compact", firstTry);
            blocker.commit();

            done.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'", id)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    /**
     * The database's side of the rule, which a lost answer needs: a flush whose first try committed finds exactly
     * its own closure ("applied_before"), while any other closure reads as someone else's.
     */
    @Test
    void theDatabaseTellsTheAttemptsOwnClosureFromSomeoneElses() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            long a = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("rf-sql").build());
            long b = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("rf-sql").build());
            List<Job> jobs = riffle.subscribe("rf-sql").take(2).collectList().block(TIMEOUT);
            Job ja = jobs.stream().filter(j -> j.id() == a).findFirst().orElseThrow();
            Job jb = jobs.stream().filter(j -> j.id() == b).findFirst().orElseThrow();
            String receipt = "SELECT b.claim_slot, b.batch_id, i.idx, b.receipt_ids[i.idx] AS rid FROM lease_claim_batches b"
                    + " CROSS JOIN LATERAL generate_subscripts(b.job_ids, 1) AS i(idx) WHERE b.job_ids[i.idx] = ? AND b.run_leases[i.idx] = ?";
            Map<String, Object> ra = OutcomeKit.row(db, receipt, a, ja.runLease());
            Map<String, Object> rb = OutcomeKit.row(db, receipt, b, jb.runLease());

            String complete = "SELECT status FROM complete_compact(ARRAY[?::int], ARRAY[?::bigint], ARRAY[?::int], ARRAY[?::bigint],"
                    + " ARRAY[?::bigint], ARRAY[?::bigint])";
            Object[] argsA = {ra.get("claim_slot"), ra.get("batch_id"), ra.get("idx"), a, ja.runLease(), ra.get("rid")};
            assertThat(db.queryRows(complete, argsA)).extracting(r -> r.get("status")).containsExactly("applied");
            assertThat(db.queryRows(complete, argsA)).extracting(r -> r.get("status")).containsExactly("applied_before");

            assertThat(riffle.admin().cancel(b).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            Object[] argsB = {rb.get("claim_slot"), rb.get("batch_id"), rb.get("idx"), b, jb.runLease(), rb.get("rid")};
            assertThat(db.queryRows(complete, argsB)).extracting(r -> r.get("status")).containsExactly("already_closed");

            String close = "SELECT status FROM close_attempts(ARRAY[?::int], ARRAY[?::bigint], ARRAY[?::int], ARRAY[?::bigint],"
                    + " ARRAY[?::bigint], ARRAY[?::bigint], ARRAY[?::text], ARRAY[NULL::bigint], ARRAY[NULL::text],"
                    + " ARRAY[false], ARRAY[false])";
            Object[] retryB = {rb.get("claim_slot"), rb.get("batch_id"), rb.get("idx"), b, jb.runLease(), rb.get("rid"), "retry"};
            assertThat(db.queryRows(close, retryB)).extracting(r -> r.get("status")).containsExactly("already_closed");
            Object[] cancelB = {rb.get("claim_slot"), rb.get("batch_id"), rb.get("idx"), b, jb.runLease(), rb.get("rid"), "cancel"};
            assertThat(db.queryRows(close, cancelB)).as("a worker cancel finding an operator cancel: same closure")
                    .extracting(r -> r.get("status")).containsExactly("applied_before");
            Object[] retryA = {ra.get("claim_slot"), ra.get("batch_id"), ra.get("idx"), a, ja.runLease(), ra.get("rid"), "retry"};
            assertThat(db.queryRows(close, retryA)).extracting(r -> r.get("status")).containsExactly("already_closed");
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
