package dev.riffle.engine.lease;

import static dev.riffle.engine.lease.LeaseKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.ExternalCallback;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Rescue of row-local claims (DESIGN.md §6.4-§6.6): deadline rescue closes expired row-local receipts explicitly and
 * moves the row-local deadline cursor; a parked (waiting) lease is not deadline-rescued; the receipt-side stale sweep
 * leaves lease-managed claims to the lease side but closes orphans; lease-side rescue closes stale leases in the
 * shape of their receipt (explicit closure for row-local, closure batch for compact).
 */
@RiffleTest
class RowLocalRescueIT {

    private static final Duration SHORT = Duration.ofMillis(500);

    private static List<RescuedAttempt> of(List<RescuedAttempt> rescued, long jobId) {
        return rescued.stream().filter(r -> r.jobId() == jobId).toList();
    }

    /** Waits until the attempt's claim is older than {@code SHORT} plus a margin, on the database clock. */
    private static void awaitClaimOlderThanShort(TestDatabase db, long jobId, long runLease) {
        LeaseKit.await("claim of job " + jobId + " older than 1 s", () -> db.queryLong(
                "SELECT count(*) FROM ("
                        + "SELECT claimed_at FROM lease_claims WHERE job_id = ? AND run_lease = ? "
                        + "UNION ALL SELECT b.claimed_at FROM lease_claim_batches b "
                        + "CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases) AS i(jid, rl) WHERE i.jid = ? AND i.rl = ?) c "
                        + "WHERE c.claimed_at < clock_timestamp() - interval '1 second'", jobId, runLease, jobId, runLease) == 1);
    }

    @Test
    void deadlineRescueClosesAnExpiredRowLocalClaimExplicitlyAndAdvancesItsCursor(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(
                QueueConfig.withDeadline("rdl", Duration.ofSeconds(1)).withMaterializedLeases()));
        try {
            LeaseKit.enqueue(riffle, "rdl", 2);
            List<Job> jobs = LeaseKit.claim(riffle, "rdl", 2);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE queue = 'rdl' AND deadline_at IS NOT NULL "
                    + "AND deadline_at = claimed_at + interval '1 second'")).as("row-local receipts carry the deadline").isEqualTo(2);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = 'rdl'")).isZero();
            // Leave open the claim with the greatest deadline-cursor key, complete the other one in time.
            long lastId = db.queryLong("SELECT job_id FROM lease_claims WHERE queue = 'rdl' "
                    + "ORDER BY deadline_at DESC, job_id DESC, run_lease DESC LIMIT 1");
            Job open = jobs.stream().filter(j -> j.id() == lastId).findFirst().orElseThrow();
            Job done = jobs.stream().filter(j -> j.id() != lastId).findFirst().orElseThrow();
            done.complete().block(TIMEOUT);
            assertThat(LeaseKit.explicitClosures(db, done.id(), done.runLease(), "completed")).isEqualTo(1);

            LeaseKit.await("deadline passed (database clock)", () -> db.queryLong(
                    "SELECT count(*) FROM lease_claims WHERE queue = 'rdl' AND deadline_at < clock_timestamp()") == 2);
            List<RescuedAttempt> rescued = riffle.maintenance().rescueDeadlinesNow().block(TIMEOUT);
            assertThat(of(rescued, done.id())).as("a completed claim is not rescued").isEmpty();
            assertThat(of(rescued, open.id())).containsExactly(new RescuedAttempt(open.id(), open.runLease(), "retryable"));

            assertThat(LeaseKit.explicitClosures(db, open.id(), open.runLease(), "deadline_expired")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, open.id(), open.runLease())).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, done.id(), done.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, open.id(), open.runLease())).as("row-local: no closure batch").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? AND closed_at IS NOT NULL",
                    open.id(), open.runLease())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, open.id(), open.runLease())).as("lease deleted").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' AND run_lease = ? "
                    + "AND payload->'errors'->0->>'message' = 'hard deadline exceeded'", open.id(), open.runLease())).isEqualTo(1);

            // The row-local deadline cursor of the claim slot moved to the last expired claim.
            Map<String, @Nullable Object> cursor = db.queryRows("SELECT s.deadline_cursor_job_id AS job_id, "
                    + "s.deadline_cursor_run_lease AS run_lease, (s.deadline_cursor_deadline_at = c.deadline_at) AS same_deadline "
                    + "FROM claim_ring_slots s JOIN lease_claims c ON c.claim_slot = s.slot "
                    + "WHERE c.job_id = ? AND c.run_lease = ?", open.id(), open.runLease()).get(0);
            assertThat(((Number) cursor.get("job_id")).longValue()).isEqualTo(open.id());
            assertThat(((Number) cursor.get("run_lease")).longValue()).isEqualTo(open.runLease());
            assertThat(cursor.get("same_deadline")).isEqualTo(Boolean.TRUE);

            // Nothing is closed twice; the worker is told; its late outcome is refused.
            assertThat(of(riffle.maintenance().rescueDeadlinesNow().block(TIMEOUT), open.id())).isEmpty();
            assertThat(LeaseKit.explicitClosures(db, open.id(), open.runLease())).isEqualTo(1);
            LeaseKit.await("cancellation signalled", open::isCancelled);
            assertThat(done.isCancelled()).isFalse();
            assertThatThrownBy(() -> open.complete().block(TIMEOUT)).isInstanceOf(AttemptRejectedException.class);
            assertThat(LeaseKit.explicitClosures(db, open.id(), open.runLease())).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aLeaseParkedOnACallbackIsNotDeadlineRescued(TestDatabase db) throws Exception {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(
                QueueConfig.withDeadline("rdlwait", Duration.ofSeconds(1)).withMaterializedLeases()));
        try {
            long id = LeaseKit.enqueue(riffle, "rdlwait", 1).get(0);
            Job job = LeaseKit.claim(riffle, "rdlwait", 1).get(0);
            ExternalCallback cb = job.registerCallback(Duration.ofMinutes(5)).block(TIMEOUT);
            CompletableFuture<String> awaited = cb.await().toFuture();
            LeaseKit.await("parked", () -> "waiting_external".equals(LeaseKit.leaseState(db, id, job.runLease())));
            assertThat(LeaseKit.rowLocalClaims(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, job.runLease())).as("the claim-time lease is reused, not doubled").isEqualTo(1);

            LeaseKit.await("claim deadline passed (database clock)", () -> db.queryLong(
                    "SELECT count(*) FROM lease_claims WHERE job_id = ? AND deadline_at < clock_timestamp()", id) == 1);
            assertThat(of(riffle.maintenance().rescueDeadlinesNow().block(TIMEOUT), id)).as("deadline suspended while waiting").isEmpty();
            assertThat(of(riffle.maintenance().rescueLeasesNow(SHORT).block(TIMEOUT), id))
                    .as("a waiting lease is neither stale nor timed out").isEmpty();
            assertThat(of(riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT), id)).as("lease-managed").isEmpty();
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leaseState(db, id, job.runLease())).isEqualTo("waiting_external");
            assertThat(awaited).isNotDone();

            riffle.resumeExternal(cb.id(), "{\"go\":1}").block(TIMEOUT);
            assertThat(LeaseKit.compact(awaited.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS))).isEqualTo("{\"go\":1}");
            job.complete().block(TIMEOUT);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease(), "completed")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id, "completed")).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void anOrphanRowLocalClaimWithoutALeaseIsClosedByTheStaleSweep(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("orphan").withMaterializedLeases()));
        try {
            long id = LeaseKit.enqueue(riffle, "orphan", 1).get(0);
            Job job = LeaseKit.claim(riffle, "orphan", 1).get(0);
            // Simulate a lease lost without its receipt being closed.
            assertThat(db.execute("DELETE FROM leases WHERE job_id = ? AND run_lease = ?", id, job.runLease())).isEqualTo(1);
            awaitClaimOlderThanShort(db, id, job.runLease());
            assertThat(of(riffle.maintenance().rescueLeasesNow(SHORT).block(TIMEOUT), id)).as("no lease: not the lease side's").isEmpty();

            List<RescuedAttempt> rescued = riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT);
            assertThat(of(rescued, id)).containsExactly(new RescuedAttempt(id, job.runLease(), "retryable"));
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease(), "rescued")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? AND closed_at IS NOT NULL",
                    id, job.runLease())).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' AND run_lease = ?",
                    id, job.runLease())).isEqualTo(1);

            assertThat(of(riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT), id)).isEmpty();
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            LeaseKit.await("cancellation signalled", job::isCancelled);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aLeaseManagedRowLocalClaimIsLeftToTheLeaseSideWhichClosesItOnceStale(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("managed").withMaterializedLeases()));
        try {
            long id = LeaseKit.enqueue(riffle, "managed", 1).get(0);
            Job job = LeaseKit.claim(riffle, "managed", 1).get(0);
            awaitClaimOlderThanShort(db, id, job.runLease());
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ?", id)).as("no heartbeat evidence").isZero();

            assertThat(of(riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT), id)).as("stale sweep skips lease-managed").isEmpty();
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isEqualTo(1);
            assertThat(of(riffle.maintenance().rescueLeasesNow(Duration.ofHours(1)).block(TIMEOUT), id))
                    .as("evidence younger than the staleness").isEmpty();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isEqualTo(1);

            List<RescuedAttempt> rescued = riffle.maintenance().rescueLeasesNow(SHORT).block(TIMEOUT);
            assertThat(of(rescued, id)).containsExactly(new RescuedAttempt(id, job.runLease(), "retryable"));
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease(), "rescued")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? AND closed_at IS NOT NULL",
                    id, job.runLease())).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' AND run_lease = ?",
                    id, job.runLease())).isEqualTo(1);

            // Neither side closes it again.
            assertThat(of(riffle.maintenance().rescueLeasesNow(SHORT).block(TIMEOUT), id)).isEmpty();
            assertThat(of(riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT), id)).isEmpty();
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            LeaseKit.await("cancellation signalled", job::isCancelled);
            assertThatThrownBy(() -> job.complete().block(TIMEOUT)).isInstanceOf(AttemptRejectedException.class);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aCompactAttemptWithAnOnDemandLeaseIsRescuedByTheLeaseSideIntoAClosureBatch(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> {});
        try {
            long id = LeaseKit.enqueue(riffle, "compactlease", 1).get(0);
            Job job = LeaseKit.claim(riffle, "compactlease", 1).get(0);
            job.registerCallback(Duration.ofMinutes(5)).block(TIMEOUT);
            assertThat(LeaseKit.leases(db, id, job.runLease())).isEqualTo(1);
            LeaseKit.await("lease evidence older than 1 s", () -> db.queryLong("SELECT count(*) FROM leases WHERE job_id = ? "
                    + "AND run_lease = ? AND heartbeat_at < clock_timestamp() - interval '1 second'", id, job.runLease()) == 1);

            assertThat(of(riffle.maintenance().rescueStaleNow(SHORT).block(TIMEOUT), id)).as("lease-managed").isEmpty();
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isZero();

            List<RescuedAttempt> rescued = riffle.maintenance().rescueLeasesNow(SHORT).block(TIMEOUT);
            assertThat(of(rescued, id)).containsExactly(new RescuedAttempt(id, job.runLease(), "retryable"));
            // Shape rule: the compact receipt closes with a closure batch, never an explicit row.
            assertThat(LeaseKit.batchClosures(db, id, job.runLease(), "rescued")).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aBeatingMaterializedAttemptIsNotLeaseRescuedUntilItsProcessStops(TestDatabase db) {
        Duration beat = Duration.ofMillis(200);
        Duration stale = Duration.ofMillis(1500);
        MaintenanceConfig beating = MaintenanceConfig.builder().enabled(false).heartbeatInterval(beat).staleAfter(stale).build();
        QueueConfig q = QueueConfig.of("beating").withMaterializedLeases();
        Riffle worker = LeaseKit.manual(db, b -> b.maintenance(beating).queue(q));
        Riffle leader = LeaseKit.manual(db, b -> b.maintenance(beating).queue(q));
        boolean workerClosed = false;
        try {
            long id = LeaseKit.enqueue(worker, "beating", 1).get(0);
            Job job = LeaseKit.claim(worker, "beating", 1).get(0);
            LeaseKit.await("heartbeat evidence for the row-local attempt", () -> db.queryLong(
                    "SELECT count(*) FROM attempt_state WHERE job_id = ? AND run_lease = ?", id, job.runLease()) == 1);
            // Alive longer than the staleness: the process keeps beating, so neither side may rescue it.
            LeaseKit.pause(stale.plus(beat.multipliedBy(2)));
            assertThat(of(leader.maintenance().rescueLeasesNow().block(TIMEOUT), id)).isEmpty();
            assertThat(of(leader.maintenance().rescueStaleNow().block(TIMEOUT), id)).isEmpty();
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isZero();

            worker.close().block(TIMEOUT);
            workerClosed = true;
            LeaseKit.await("lease-side rescue after the beats stop", () -> !of(
                    leader.maintenance().rescueLeasesNow().block(TIMEOUT), id).isEmpty());
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease(), "rescued")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, job.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ?", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' AND run_lease = ?",
                    id, job.runLease())).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            if (!workerClosed) {
                LeaseKit.close(worker);
            }
            LeaseKit.close(leader);
        }
    }
}
