package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/** Operator cancel by job id, wherever the job is: ready, scheduled or retryable, running, or already gone. */
@RiffleTest
class CancelIT extends ProbeIT {
    private static void assertRejected(Mono<Void> write) {
        assertThatThrownBy(() -> write.block(TIMEOUT)).isInstanceOfSatisfying(AttemptRejectedException.class,
                e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
    }

    @Test
    void aCancelledReadyJobIsTombstonedAndNeverDelivered() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            long cancelled = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("cancel-ready").args("{\"who\":\"victim\"}").build());
            long sentinel = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("cancel-ready").build());

            assertThat(riffle.admin().cancel(cancelled).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
            assertThat(db.queryLong("SELECT count(*) FROM ready_tombstones WHERE job_id = ?", cancelled)).isEqualTo(1);
            Map<String, Object> t = row(db, "SELECT state::text AS state, attempt, args->>'who' AS who FROM terminal_jobs "
                    + "WHERE job_id = ?", cancelled);
            assertThat(t.get("state")).isEqualTo("cancelled");
            assertThat(asLong(t.get("attempt"))).isZero();
            assertThat(t.get("who")).isEqualTo("victim");

            // The sentinel sits behind the cancelled job in the same lane, so a claim that did not skip the
            // tombstone would hand out the cancelled job first.
            List<Long> delivered = riffle.subscribe("cancel-ready")
                    .flatMap((Job j) -> j.complete().thenReturn(j.id()))
                    .takeUntil(id -> id == sentinel)
                    .collectList()
                    .block(TIMEOUT);
            assertThat(delivered).containsExactly(sentinel);
            assertThat(claimsOf(db, cancelled)).isZero();
            assertThat(riffle.counts("cancel-ready").block(TIMEOUT).available()).isZero();
            assertThat(riffle.admin().cancel(cancelled).block(TIMEOUT)).as("second cancel").isEqualTo(CancelResult.NOT_FOUND);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", cancelled)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aCancelledScheduledOrRetryableJobLeavesTheBacklogAndIsRecordedCancelled() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("k", job -> Mono.just(JobOutcome.retry("later", Duration.ofMinutes(5)))),
                2, "cancel-deferred").subscribe();
        try {
            long scheduled = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("cancel-deferred").args("{\"n\":1}")
                    .runAt(Instant.now().plus(Duration.ofHours(1))).build());
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'scheduled'", scheduled)).isEqualTo(1);
            long retryable = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("cancel-deferred").build());
            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable'", retryable);

            assertThat(riffle.admin().cancel(scheduled).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
            assertThat(riffle.admin().cancel(retryable).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);

            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id IN (?, ?)", scheduled, retryable)).isZero();
            Map<String, Object> s = row(db, "SELECT state::text AS state, attempt, run_lease, args->>'n' AS n FROM terminal_jobs "
                    + "WHERE job_id = ?", scheduled);
            assertThat(s.get("state")).isEqualTo("cancelled");
            assertThat(asLong(s.get("attempt"))).isZero();
            assertThat(s.get("n")).as("a job with no ready row keeps its body in the terminal row").isEqualTo("1");
            Map<String, Object> r = row(db, "SELECT state::text AS state, attempt, run_lease FROM terminal_jobs WHERE job_id = ?", retryable);
            assertThat(r.get("state")).isEqualTo("cancelled");
            assertThat(asLong(r.get("attempt"))).isEqualTo(1);
            assertThat(asLong(r.get("run_lease"))).isEqualTo(1);

            // The retryable job's only attempt was closed once, by its retry; the cancel closed nothing more.
            assertThat(closuresOf(db, retryable, 1)).isEqualTo(1);
            db.execute("UPDATE deferred_jobs SET run_at = now() WHERE queue = 'cancel-deferred'");
            assertThat(promote(riffle)).as("nothing left to promote").isZero();
            assertThat(claimsOf(db, scheduled)).isZero();
            assertThat(claimsOf(db, retryable)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", scheduled)).isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aCancelledRunningJobIsSignalledAndItsLaterCompletionIsRejected() {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Job> held = new ConcurrentLinkedQueue<>();
        Disposable sub = riffle.subscribe("cancel-running").subscribe(held::add);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("cancel-running").build());
            await("delivery", () -> held.size() == 1);
            Job job = held.peek();
            assertThat(job.id()).isEqualTo(id);
            assertThat(job.isCancelled()).isFalse();

            assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            // Completes empty once the NOTIFY reached this engine; a timeout here means the handler was never told.
            job.cancellation().block(Duration.ofSeconds(10));
            assertThat(job.isCancelled()).isTrue();

            assertRejected(job.complete());
            assertRejected(job.finish(JobOutcome.retry("too late")));
            assertRejected(job.finish(JobOutcome.fail("too late")));

            assertThat(closuresOf(db, id, 1)).as("one closure for the one attempt").isEqualTo(1);
            assertThat(db.queryRows("SELECT outcome FROM lease_claim_closure_batches WHERE receipt_ranges @> ?::bigint",
                    OutcomeKit.receiptOf(db, id, 1))).extracting(r -> r.get("outcome")).containsExactly("cancelled");
            Map<String, Object> t = row(db, "SELECT state::text AS state, attempt, run_lease FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(t.get("state")).isEqualTo("cancelled");
            assertThat(asLong(t.get("attempt"))).isEqualTo(1);
            assertThat(asLong(t.get("run_lease"))).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM receipt_completion_batches WHERE job_ids @> ARRAY[?]::bigint[]", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();
            assertThat(promote(riffle)).isZero();
            assertThat(claimsOf(db, id)).as("not delivered again").isEqualTo(1);
            assertThat(riffle.counts("cancel-running").block(TIMEOUT).inFlight()).isZero();
            assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.NOT_FOUND);
        } finally {
            sub.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aHandlerCanCancelItsOwnJob() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("k", job -> Mono.just(JobOutcome.cancel("not needed any more"))), 2, "self-cancel")
                .subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("self-cancel").maxAttempts(5).build());
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id);
            Map<String, Object> t = row(db, "SELECT state::text AS state, attempt, payload->'errors'->0->>'message' AS message "
                    + "FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(t.get("state")).isEqualTo("cancelled");
            assertThat(asLong(t.get("attempt"))).isEqualTo(1);
            assertThat(t.get("message")).isEqualTo("not needed any more");
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).as("a cancel is not a failure").isZero();
            assertThat(closuresOf(db, id, 1)).isEqualTo(1);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void cancelOfAnUnknownFinishedOrDeadLetteredJobIsNotFoundAndWritesNothing() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("ok", job -> Mono.empty(), "bad", job -> Mono.just(JobOutcome.fail("no"))), 2,
                "cancel-gone").subscribe();
        try {
            long completed = OutcomeKit.enqueue(riffle, NewJob.builder("ok").queue("cancel-gone").build());
            long dead = OutcomeKit.enqueue(riffle, NewJob.builder("bad").queue("cancel-gone").build());
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", completed);
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", dead);
            long doneRows = db.queryLong("SELECT count(*) FROM done_entries");
            long tombstones = db.queryLong("SELECT count(*) FROM ready_tombstones");
            long closures = db.queryLong("SELECT count(*) FROM lease_claim_closure_batches");

            assertThat(riffle.admin().cancel(Long.MAX_VALUE).block(TIMEOUT)).isEqualTo(CancelResult.NOT_FOUND);
            assertThat(riffle.admin().cancel(completed).block(TIMEOUT)).isEqualTo(CancelResult.NOT_FOUND);
            assertThat(riffle.admin().cancel(dead).block(TIMEOUT)).isEqualTo(CancelResult.NOT_FOUND);

            assertThat(db.queryLong("SELECT count(*) FROM done_entries")).isEqualTo(doneRows);
            assertThat(db.queryLong("SELECT count(*) FROM ready_tombstones")).isEqualTo(tombstones);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_closure_batches")).isEqualTo(closures);
            assertThat(row(db, "SELECT state::text AS state FROM terminal_jobs WHERE job_id = ?", completed).get("state"))
                    .isEqualTo("completed");
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", dead)).isEqualTo(1);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    /**
     * Cancels of ready jobs race claims of the same lane. Without the claim-head lock in cancel_job a cancel can
     * tombstone a row that an uncommitted claim has already handed out, and the job then both runs and is cancelled.
     * That window is one claim statement long, so each cancel is aimed at it: when job {@code i} is delivered, the
     * claim in flight is most likely taking the jobs just after it, and that is when the even jobs a few positions
     * ahead are cancelled.
     */
    @Test
    void cancelsRacingClaimsEndEveryJobExactlyOnce() {
        int n = 600;
        String q = "cancel-race";
        Riffle worker = OutcomeKit.start(db, b -> b.maxClaimBatch(8).poolSize(8));
        Riffle operator = OutcomeKit.start(db, b -> b.poolSize(10));
        Set<Long> delivered = ConcurrentHashMap.newKeySet();
        Queue<Long> redelivered = new ConcurrentLinkedQueue<>();
        Set<Long> completed = ConcurrentHashMap.newKeySet();
        Set<Long> rejected = ConcurrentHashMap.newKeySet();
        Set<Integer> issued = ConcurrentHashMap.newKeySet();
        Map<Long, CancelResult> cancels = new ConcurrentHashMap<>();
        Queue<Throwable> cancelErrors = new ConcurrentLinkedQueue<>();
        List<Long> ids = new ArrayList<>();
        Map<Long, Integer> indexOf = new ConcurrentHashMap<>();
        Consumer<Integer> cancelIndex = i -> {
            if (i < n && i % 2 == 0 && issued.add(i)) {
                long id = ids.get(i);
                operator.admin().cancel(id).subscribe(r -> cancels.put(id, r), cancelErrors::add);
            }
        };
        Function<Job, Mono<Void>> handle = job -> {
            if (!delivered.add(job.id())) {
                redelivered.add(job.id());
            }
            int i = indexOf.get(job.id());
            for (int ahead = 3; ahead <= 12; ahead++) {
                cancelIndex.accept(i + ahead);
            }
            // A short pause keeps attempts open long enough for some cancels to find them running.
            return Mono.delay(Duration.ofMillis(2))
                    .then(job.complete())
                    .doOnSuccess(v -> completed.add(job.id()))
                    .onErrorResume(AttemptRejectedException.class, e -> {
                        rejected.add(job.id());
                        return Mono.empty();
                    });
        };
        List<Disposable> drains = new ArrayList<>();
        try {
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                jobs.add(NewJob.builder("k").queue(q).args("{\"i\":" + i + "}").build());
            }
            ids.addAll(worker.client().enqueueMany(jobs).block(TIMEOUT));
            for (int i = 0; i < n; i++) {
                indexOf.put(ids.get(i), i);
            }
            // Jobs too early to be reached from a delivery are cancelled up front; every later even job is
            // reached from an odd one, and odd jobs are never cancelled, so each even job gets its cancel.
            for (int i = 0; i < 3; i++) {
                cancelIndex.accept(i);
            }
            // Those are answered before anything claims (on a loaded machine they could otherwise lose to the first
            // claims, which the race below does not need to be about).
            await("up-front cancels answered", () -> cancels.size() + cancelErrors.size() == 2);
            for (int i = 0; i < 2; i++) {
                drains.add(worker.subscribe(q).flatMap(handle, 16, 1).subscribe());
            }
            await("every cancel answered", Duration.ofSeconds(60), () -> cancels.size() + cancelErrors.size() == n / 2);
            assertThat(cancelErrors).isEmpty();

            awaitCount(db, n, "SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE queue = ?", q);
            await("every delivered attempt answered", () -> completed.size() + rejected.size() == delivered.size());

            assertThat(db.queryRows("SELECT job_id, count(*) AS n FROM terminal_jobs WHERE queue = ? GROUP BY job_id "
                    + "HAVING count(*) > 1", q)).as("jobs with more than one terminal row").isEmpty();
            assertThat(redelivered).as("jobs delivered twice").isEmpty();
            Map<CancelResult, List<Long>> byResult = new EnumMap<>(CancelResult.class);
            cancels.forEach((id, r) -> byResult.computeIfAbsent(r, x -> new ArrayList<>()).add(id));
            List<Long> tombstoned = byResult.getOrDefault(CancelResult.CANCELLED_AVAILABLE, List.of());
            List<Long> stopped = byResult.getOrDefault(CancelResult.CANCELLED_RUNNING, List.of());
            List<Long> tooLate = byResult.getOrDefault(CancelResult.NOT_FOUND, List.of());
            assertThat(byResult).doesNotContainKey(CancelResult.CANCELLED_SCHEDULED);
            assertThat(tombstoned).as("cancelled before any claim: never delivered").doesNotContainAnyElementsOf(delivered);
            assertThat(stopped).as("cancelled while running: delivered, completion refused")
                    .allMatch(delivered::contains).allMatch(rejected::contains);
            assertThat(tooLate).as("cancel lost to the completion").allMatch(completed::contains);

            List<Map<String, Object>> states = db.queryRows("SELECT job_id, state::text AS state FROM terminal_jobs WHERE queue = ?", q);
            Map<Long, String> stateOf = new HashMap<>();
            states.forEach(r -> stateOf.put(asLong(r.get("job_id")), (String) r.get("state")));
            for (long id : ids) {
                String expected = tombstoned.contains(id) || stopped.contains(id) ? "cancelled" : "completed";
                assertThat(stateOf.get(id)).as("state of job %d", id).isEqualTo(expected);
            }
            assertThat(completed).as("a completion was accepted exactly for the completed jobs")
                    .hasSize(n - tombstoned.size() - stopped.size());
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches b, unnest(b.receipt_ids) r(id) WHERE b.queue = ? "
                    + "AND (SELECT count(*) FROM lease_claim_closure_batches c WHERE c.receipt_ranges @> r.id) <> 1", q))
                    .as("receipts without exactly one closure").isZero();
            assertThat(tombstoned).as("cancelled up front, before any claim").contains(ids.get(0), ids.get(2));
            // The race was real only if both sides won some of it.
            assertThat(stopped.size() + tooLate.size()).as("cancels that met an already claimed job").isPositive();
            assertThat(completed).isNotEmpty();
        } finally {
            drains.forEach(Disposable::dispose);
            OutcomeKit.close(worker, operator);
        }
    }
}
