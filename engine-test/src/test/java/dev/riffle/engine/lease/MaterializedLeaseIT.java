package dev.riffle.engine.lease;

import static dev.riffle.engine.lease.LeaseKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A queue configured with {@link QueueConfig#withMaterializedLeases()} claims into the row-local shape: one
 * {@code lease_claims} row and one {@code leases} row per job, no compact batch. Every exit closes the receipt
 * exactly once with an explicit {@code lease_claim_closures} row (DESIGN.md §2.7), fences {@code closed_at}, ends
 * the lease, and leaves every claim slot balanced.
 */
@RiffleTest
class MaterializedLeaseIT {

    @Test
    void claimWritesRowLocalReceiptsAndLeasesAndCompletionClosesEachExactlyOnce(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("mat").withMaterializedLeases()));
        try {
            int k = 3;
            LeaseKit.enqueue(riffle, "mat", k);
            List<Job> jobs = LeaseKit.claim(riffle, "mat", k);
            assertThat(jobs).hasSize(k);

            // Claim shape: k row-local receipts, k running leases, and no compact batch at all.
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE queue = 'mat'")).isEqualTo(k);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE queue = 'mat' AND state = 'running'")).isEqualTo(k);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = 'mat'")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE queue = 'mat' AND closed_at IS NOT NULL")).isZero();
            for (Job j : jobs) {
                assertThat(j.attempt()).isEqualTo(1);
                assertThat(LeaseKit.rowLocalClaims(db, j.id(), j.runLease())).as("receipt of job %d", j.id()).isEqualTo(1);
                assertThat(LeaseKit.leases(db, j.id(), j.runLease())).as("lease of job %d", j.id()).isEqualTo(1);
                assertThat(LeaseKit.explicitClosures(db, j.id(), j.runLease())).isZero();
                // The lease and the receipt describe the same attempt.
                Map<String, @Nullable Object> row = db.queryRows("SELECT l.attempt AS lease_attempt, c.attempt AS claim_attempt, "
                        + "l.receipt_id AS lease_receipt, c.receipt_id AS claim_receipt, l.claim_slot AS lease_claim_slot, "
                        + "c.claim_slot AS claim_slot FROM leases l JOIN lease_claims c ON c.job_id = l.job_id "
                        + "AND c.run_lease = l.run_lease WHERE l.job_id = ? AND l.run_lease = ?", j.id(), j.runLease()).get(0);
                assertThat(((Number) row.get("lease_attempt")).intValue()).isEqualTo(1);
                assertThat(((Number) row.get("claim_attempt")).intValue()).isEqualTo(1);
                assertThat(row.get("lease_receipt")).isEqualTo(row.get("claim_receipt"));
                assertThat(row.get("lease_claim_slot")).isEqualTo(row.get("claim_slot"));
            }
            // Open receipts: the slot proof must not hold yet (k claims, no closures).
            assertThat(db.queryLong("SELECT count(*) FROM (SELECT DISTINCT claim_slot FROM lease_claims WHERE queue = 'mat') s "
                    + "WHERE claim_slot_balanced(s.claim_slot)")).isZero();

            for (Job j : jobs) {
                j.complete().block(TIMEOUT);
            }
            for (Job j : jobs) {
                assertThat(LeaseKit.explicitClosures(db, j.id(), j.runLease(), "completed"))
                        .as("explicit completed closure of job %d", j.id()).isEqualTo(1);
                assertThat(LeaseKit.explicitClosures(db, j.id(), j.runLease())).isEqualTo(1);
                // Shape rule: a row-local receipt never gets a closure batch on top.
                assertThat(LeaseKit.batchClosures(db, j.id(), j.runLease())).as("closure batches of job %d", j.id()).isZero();
                assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? "
                        + "AND closed_at IS NOT NULL", j.id(), j.runLease())).as("closed_at fence").isEqualTo(1);
                assertThat(LeaseKit.leases(db, j.id(), j.runLease())).as("lease ended").isZero();
                assertThat(LeaseKit.terminal(db, j.id(), "completed")).as("terminal history").isEqualTo(1);
                assertThat(LeaseKit.terminal(db, j.id())).isEqualTo(1);
            }
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE queue = 'mat'")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state a JOIN lease_claims c "
                    + "ON c.job_id = a.job_id AND c.run_lease = a.run_lease WHERE c.queue = 'mat'")).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).as("claim slot proof after every close").isZero();

            // A second completion is the stale-writer guard at work: rejected, nothing written twice.
            Job first = jobs.get(0);
            assertThatThrownBy(() -> first.complete().block(TIMEOUT))
                    .isInstanceOfSatisfying(AttemptRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
            assertThat(LeaseKit.explicitClosures(db, first.id(), first.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, first.id(), first.runLease())).isZero();
            assertThat(LeaseKit.terminal(db, first.id())).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void aRetriedMaterializedAttemptIsRedeliveredAsAttemptTwoAndMaterializesAgain(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("matretry").withMaterializedLeases()));
        try {
            long id = LeaseKit.enqueue(riffle, "matretry", 1, 3).get(0);
            Job first = LeaseKit.claim(riffle, "matretry", 1).get(0);
            assertThat(first.id()).isEqualTo(id);
            assertThat(first.attempt()).isEqualTo(1);
            first.retry("boom on attempt 1").block(TIMEOUT);

            assertThat(LeaseKit.explicitClosures(db, id, first.runLease(), "retryable")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, first.runLease())).isEqualTo(1);
            assertThat(LeaseKit.batchClosures(db, id, first.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? AND closed_at IS NOT NULL",
                    id, first.runLease())).isEqualTo(1);
            assertThat(LeaseKit.leases(db, id, first.runLease())).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' "
                    + "AND attempt = 1 AND run_lease = ? AND payload->'errors'->0->>'message' LIKE '%boom on attempt 1%'",
                    id, first.runLease())).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id)).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();

            assertThat(LeaseKit.makeDueAndPromote(db, riffle, id)).isEqualTo(1);
            Job second = LeaseKit.claim(riffle, "matretry", 1).get(0);
            assertThat(second.id()).isEqualTo(id);
            assertThat(second.attempt()).isEqualTo(2);
            assertThat(second.runLease()).isGreaterThan(first.runLease());
            // The new attempt materializes again: its own receipt and lease, still no compact batch.
            assertThat(LeaseKit.rowLocalClaims(db, id, second.runLease())).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE job_id = ? AND run_lease = ? AND attempt = 2",
                    id, second.runLease())).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = 'matretry'")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? "
                    + "AND claim_slot_balanced(claim_slot)", id, second.runLease())).as("open receipt unbalances its slot").isZero();

            // The first attempt's late writes are refused: only the live attempt can finish the job.
            assertThatThrownBy(() -> first.complete().block(TIMEOUT)).isInstanceOf(AttemptRejectedException.class);
            second.complete().block(TIMEOUT);
            assertThat(LeaseKit.explicitClosures(db, id, second.runLease(), "completed")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, id, first.runLease())).as("first attempt closed once").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed' AND attempt = 2",
                    id)).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, id)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE job_id = ?", id)).isZero();
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }

    @Test
    void failAndCancelCloseRowLocalReceiptsExplicitlyWithTheirDisposition(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("matexit").withMaterializedLeases().withDlq(false)));
        try {
            LeaseKit.enqueue(riffle, "matexit", 2);
            List<Job> jobs = LeaseKit.claim(riffle, "matexit", 2);
            Job failed = jobs.get(0);
            Job cancelled = jobs.get(1);
            failed.fail("bad input").block(TIMEOUT);
            cancelled.cancel("not needed").block(TIMEOUT);

            assertThat(LeaseKit.explicitClosures(db, failed.id(), failed.runLease(), "failed")).isEqualTo(1);
            assertThat(LeaseKit.explicitClosures(db, cancelled.id(), cancelled.runLease(), "cancelled")).isEqualTo(1);
            for (Job j : jobs) {
                assertThat(LeaseKit.explicitClosures(db, j.id(), j.runLease())).isEqualTo(1);
                assertThat(LeaseKit.batchClosures(db, j.id(), j.runLease())).isZero();
                assertThat(LeaseKit.leases(db, j.id(), j.runLease())).isZero();
                assertThat(db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ? "
                        + "AND closed_at IS NOT NULL", j.id(), j.runLease())).isEqualTo(1);
                assertThatThrownBy(() -> j.complete().block(TIMEOUT))
                        .isInstanceOfSatisfying(AttemptRejectedException.class,
                                e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
            }
            assertThat(LeaseKit.terminal(db, failed.id(), "failed")).isEqualTo(1);
            assertThat(LeaseKit.terminal(db, cancelled.id(), "cancelled")).isEqualTo(1);
            assertThat(LeaseKit.unbalancedSlots(db)).isZero();
        } finally {
            LeaseKit.close(riffle);
        }
    }
}
