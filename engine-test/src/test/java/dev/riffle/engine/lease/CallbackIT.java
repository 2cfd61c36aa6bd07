package dev.riffle.engine.lease;

import static dev.riffle.engine.lease.LeaseKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.CallbackRejectedException;
import dev.riffle.engine.api.CallbackTimeoutException;
import dev.riffle.engine.api.ExternalCallback;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * External-wait callbacks (DESIGN.md §5.6, §6.6): a compact attempt materializes a lease when it registers a
 * callback (its receipt stays compact), parks on it, and is resumed from any engine on the schema, at most once. An
 * unresolved callback times out through lease-side rescue and the job comes back for another attempt.
 */
@RiffleTest
class CallbackIT {

    private static final String KIND = "lease.job";

    /** Waits until the attempt's lease is parked on its callback. */
    private static void awaitParked(TestDatabase db, long jobId, long runLease) {
        LeaseKit.await("lease of job " + jobId + " waiting_external",
                () -> "waiting_external".equals(LeaseKit.leaseState(db, jobId, runLease)));
    }

    private static long leasesWithCallback(TestDatabase db, UUID id) {
        return db.queryLong("SELECT count(*) FROM leases WHERE callback_id = ?", id);
    }

    @Test
    void aHandlerParkedOnEngineAIsResumedFromEngineBAndCompletesExactlyOnce(TestDatabase db) {
        Riffle a = LeaseKit.manual(db, b -> {});
        Riffle other = LeaseKit.manual(db, b -> {});
        AtomicReference<ExternalCallback> registered = new AtomicReference<>();
        AtomicReference<Job> seen = new AtomicReference<>();
        Queue<String> payloads = new ConcurrentLinkedQueue<>();
        Queue<JobResult> results = new ConcurrentLinkedQueue<>();
        JobHandler handler = job -> {
            seen.set(job);
            return job.registerCallback(Duration.ofMinutes(5))
                    .doOnNext(registered::set)
                    .flatMap(ExternalCallback::await)
                    .doOnNext(payloads::add)
                    .thenReturn(JobOutcome.complete());
        };
        Disposable worker = a.work(Map.of(KIND, handler), 1, "cb").subscribe(results::add);
        try {
            long id = LeaseKit.enqueue(a, "cb", 1).get(0);
            LeaseKit.await("callback registered", () -> registered.get() != null);
            ExternalCallback cb = registered.get();
            Job job = seen.get();
            assertThat(job.id()).isEqualTo(id);

            // Materialized on demand: one lease carrying the callback; the receipt stays a compact batch item.
            assertThat(leasesWithCallback(db, cb.id())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.compactClaims(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.rowLocalClaims(db, id, job.runLease())).as("no row-local receipt for a compact attempt").isZero();
            long dbTimeoutMillis = db.queryLong("SELECT floor(extract(epoch FROM callback_timeout_at) * 1000)::bigint "
                    + "FROM leases WHERE callback_id = ?", cb.id());
            assertThat(Math.abs(dbTimeoutMillis - cb.timeoutAt().toEpochMilli())).as("timeoutAt() is the stored timeout")
                    .isLessThanOrEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE callback_id = ? AND callback_timeout_at "
                    + "BETWEEN clock_timestamp() + interval '4 minutes' AND clock_timestamp() + interval '5 minutes 1 second'",
                    cb.id())).as("timeout is about 5 minutes out (database clock)").isEqualTo(1);

            awaitParked(db, id, job.runLease());
            assertThat(payloads).isEmpty();
            assertThat(results).isEmpty();

            other.resumeExternal(cb.id(), "{\"ok\":1}").block(TIMEOUT);

            LeaseKit.await("handler finished", () -> results.size() == 1);
            assertThat(payloads).hasSize(1);
            assertThat(LeaseKit.compact(payloads.peek())).isEqualTo("{\"ok\":1}");
            JobResult result = results.peek();
            assertThat(result.accepted()).isTrue();
            assertThat(result.outcome()).isInstanceOf(JobOutcome.Complete.class);
            assertThat(result.jobId()).isEqualTo(id);

            // Completed exactly once, closed in the compact shape, lease gone.
            assertThat(LeaseKit.terminal(db, id, "completed")).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id)).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "completed")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).as("compact receipt: no explicit closure").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE job_id = ?", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ?", id)).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();

            // The attempt has ended: nobody can resolve its callback any more, and nothing changes.
            assertThatThrownBy(() -> other.resumeExternal(cb.id(), "{\"late\":true}").block(TIMEOUT))
                    .isInstanceOf(CallbackRejectedException.class);
            assertThat(LeaseKit.terminal(db, id)).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
        } finally {
            worker.dispose();
            LeaseKit.close(a, other);
        }
    }

    @Test
    void onlyTheFirstResolutionCountsUnknownIdsAndInvalidPayloadsAreRejected(TestDatabase db) throws Exception {
        Riffle a = LeaseKit.manual(db, b -> {});
        Riffle other = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(a, "cbonce", 1).get(0);
            Job job = LeaseKit.claim(a, "cbonce", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofMinutes(5)).block(TIMEOUT);
            assertThat(cb).isNotNull();

            // Not JSON, JSON that is not an object (both refused before sending), and an object jsonb cannot store
            // (a NUL escape, refused by the database): each is InvalidJobException for the payload, and the
            // callback is still pending.
            for (String bad : List.of("not json", "[1,2]", "{\"note\":\"\\u0000\"}")) {
                assertThatThrownBy(() -> other.resumeExternal(cb.id(), bad).block(TIMEOUT))
                        .as("payload %s", bad)
                        .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("payload"));
            }
            assertThat(leasesWithCallback(db, cb.id())).as("callback still registered after invalid payloads").isEqualTo(1);
            assertThat(LeaseKit.leaseState(db, id, job.runLease())).isEqualTo("running");

            // An id nobody registered.
            UUID unknown = UUID.randomUUID();
            assertThatThrownBy(() -> other.resumeExternal(unknown, "{\"x\":1}").block(TIMEOUT))
                    .isInstanceOfSatisfying(CallbackRejectedException.class, e -> {
                        assertThat(e.reason()).isEqualTo(CallbackRejectedException.Reason.NOT_FOUND);
                        assertThat(e.callbackId()).isEqualTo(unknown);
                    });

            CompletableFuture<String> awaited = cb.await().toFuture();
            awaitParked(db, id, job.runLease());

            other.resumeExternal(cb.id(), "{\"first\":1}").block(TIMEOUT);
            assertThatThrownBy(() -> a.resumeExternal(cb.id(), "{\"second\":2}").block(TIMEOUT))
                    .isInstanceOfSatisfying(CallbackRejectedException.class, e -> {
                        assertThat(e.reason()).isEqualTo(CallbackRejectedException.Reason.ALREADY_RESOLVED);
                        assertThat(e.callbackId()).isEqualTo(cb.id());
                    });
            assertThatThrownBy(() -> other.resumeExternal(cb.id(), "{\"third\":3}").block(TIMEOUT))
                    .isInstanceOfSatisfying(CallbackRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(CallbackRejectedException.Reason.ALREADY_RESOLVED));

            String payload = awaited.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(LeaseKit.compact(payload)).as("the first resolution wins").isEqualTo("{\"first\":1}");
            LeaseKit.await("lease running again", () -> "running".equals(LeaseKit.leaseState(db, id, job.runLease())));

            job.complete().block(TIMEOUT);
            assertThat(LeaseKit.terminal(db, id, "completed")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "completed")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(a, other);
        }
    }

    @Test
    void anUnresolvedCallbackTimesOutThroughLeaseRescueAndTheJobComesBack(TestDatabase db) {
        Riffle worker = LeaseKit.manual(db, b -> {});
        Riffle leader = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(worker, "cbtimeout", 1, 3).get(0);
            Job job = LeaseKit.claim(worker, "cbtimeout", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofSeconds(1)).block(TIMEOUT);
            CompletableFuture<String> awaited = cb.await().toFuture();
            awaitParked(db, id, job.runLease());

            LeaseKit.await("callback timeout passed (database clock)", () -> db.queryLong(
                    "SELECT count(*) FROM leases WHERE callback_id = ? AND callback_timeout_at < clock_timestamp()", cb.id()) == 1);
            List<RescuedAttempt> rescued = leader.maintenance().rescueLeasesNow().block(TIMEOUT);
            assertThat(rescued).filteredOn(r -> r.jobId() == id)
                    .containsExactly(new RescuedAttempt(id, job.runLease(), "retryable"));

            // Closed once, in the compact shape, labelled callback_timeout; lease gone; back to retryable.
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "callback_timeout")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' "
                    + "AND attempt = 1 AND run_lease = ?", id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();

            // A second pass finds nothing more to do.
            assertThat(leader.maintenance().rescueLeasesNow().block(TIMEOUT)).noneMatch(r -> r.jobId() == id);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);

            // The parked handler is told; its late outcome is refused; the dead callback cannot be resolved.
            LeaseKit.await("await() errored", awaited::isDone);
            assertThatThrownBy(awaited::get).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(CallbackTimeoutException.class);
            assertThatThrownBy(() -> job.complete().block(TIMEOUT)).isInstanceOf(AttemptRejectedException.class);
            assertThatThrownBy(() -> leader.resumeExternal(cb.id(), "{\"late\":true}").block(TIMEOUT))
                    .isInstanceOfSatisfying(CallbackRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(CallbackRejectedException.Reason.NOT_FOUND));
            assertThat(LeaseKit.terminal(db, id)).isZero();

            assertThat(LeaseKit.makeDueAndPromote(db, leader, id)).isEqualTo(1);
            Job again = LeaseKit.claim(worker, "cbtimeout", 1).get(0);
            assertThat(again.id()).isEqualTo(id);
            assertThat(again.attempt()).isEqualTo(2);
            assertThat(again.runLease()).isGreaterThan(job.runLease());
            again.complete().block(TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed' AND attempt = 2",
                    id)).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id)).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(worker, leader);
        }
    }

    @Test
    void aTimedOutCallbackOfAnExhaustedAttemptGoesToTheDlq(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(riffle, "cbexhausted", 1, 1).get(0);
            Job job = LeaseKit.claim(riffle, "cbexhausted", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofSeconds(1)).block(TIMEOUT);
            CompletableFuture<String> awaited = cb.await().toFuture();
            awaitParked(db, id, job.runLease());
            LeaseKit.await("callback timeout passed (database clock)", () -> db.queryLong(
                    "SELECT count(*) FROM leases WHERE callback_id = ? AND callback_timeout_at < clock_timestamp()", cb.id()) == 1);

            List<RescuedAttempt> rescued = riffle.maintenance().rescueLeasesNow().block(TIMEOUT);
            assertThat(rescued).filteredOn(r -> r.jobId() == id)
                    .containsExactly(new RescuedAttempt(id, job.runLease(), "dlq"));
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "callback_timeout")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).as("no further retry").isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            LeaseKit.await("await() errored", awaited::isDone);
            assertThat(awaited).isCompletedExceptionally();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aResolutionThatArrivesBeforeAwaitIsNotLost(TestDatabase db) throws Exception {
        Riffle a = LeaseKit.manual(db, b -> {});
        Riffle other = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(a, "cbearly", 1).get(0);
            Job job = LeaseKit.claim(a, "cbearly", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofMinutes(5)).block(TIMEOUT);
            // The external system answers before the handler gets round to parking.
            other.resumeExternal(cb.id(), "{\"early\":true}").block(TIMEOUT);
            assertThatThrownBy(() -> other.resumeExternal(cb.id(), "{\"early\":false}").block(TIMEOUT))
                    .isInstanceOfSatisfying(CallbackRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(CallbackRejectedException.Reason.ALREADY_RESOLVED));

            String payload = cb.await().block(TIMEOUT);
            assertThat(payload).isNotNull();
            assertThat(LeaseKit.compact(payload)).isEqualTo("{\"early\":true}");
            assertThat(LeaseKit.leaseState(db, id, job.runLease())).as("resolved attempt is running, not parked")
                    .isEqualTo("running");

            job.complete().block(TIMEOUT);
            assertThat(LeaseKit.terminal(db, id, "completed")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(a, other);
        }
    }

    @Test
    void anOperatorCancelOfAParkedAttemptEndsItsAwait(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(riffle, "cbcancel", 1).get(0);
            Job job = LeaseKit.claim(riffle, "cbcancel", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofMinutes(5)).block(TIMEOUT);
            CompletableFuture<String> awaited = cb.await().toFuture();
            awaitParked(db, id, job.runLease());

            riffle.admin().cancel(id).block(TIMEOUT);
            LeaseKit.await("await() errored", awaited::isDone);
            assertThatThrownBy(awaited::get).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(CallbackTimeoutException.class);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "cancelled")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.terminal(db, id, "cancelled")).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id)).isEqualTo(1);
            assertThatThrownBy(() -> riffle.resumeExternal(cb.id(), "{\"late\":true}").block(TIMEOUT))
                    .isInstanceOf(CallbackRejectedException.class);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }
}
