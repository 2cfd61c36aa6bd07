package dev.riffle.engine.lease;

import static dev.riffle.engine.lease.LeaseKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import org.junit.jupiter.api.Test;

/**
 * The lease ring (DESIGN.md §3.1, §6.10): a live lease pins its slot. Rotation will not re-enter it and prune skips
 * it while the lease lives; once the lease has ended, prune truncates the slot (reclaiming the dead lease row), and
 * a slot with nothing in it at all is a no-op. One method only: the ring position belongs to the class's schema.
 */
@RiffleTest(leaseSlots = 8)
class LeaseRingPruneIT {

    private static long rows(TestDatabase db, int slot) {
        return db.queryLong("SELECT count(*) FROM leases_" + slot);
    }

    private static long bytes(TestDatabase db, int slot) {
        return db.queryLong("SELECT pg_relation_size('leases_" + slot + "')");
    }

    private static long cursorSlot(TestDatabase db) {
        return db.queryLong("SELECT slot FROM lease_ring_rotations ORDER BY generation DESC LIMIT 1");
    }

    @Test
    void aLiveLeasePinsItsSlotUntilItEndsThenTheSlotIsTruncated(TestDatabase db) {
        Riffle riffle = LeaseKit.manual(db, b -> b.queue(QueueConfig.of("ring").withMaterializedLeases()));
        try {
            // Fresh ring: nothing anywhere.
            assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(PruneOutcome.NOOP);
            assertThat(riffle.maintenance().rotateNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(RotateOutcome.SKIPPED_IDLE);
            assertThat(cursorSlot(db)).isZero();

            long id = LeaseKit.enqueue(riffle, "ring", 1).get(0);
            Job job = LeaseKit.claim(riffle, "ring", 1).get(0);
            assertThat(rows(db, 0)).as("the lease lives in the slot current at claim time").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE job_id = ? AND lease_slot = 0 AND lease_generation = 0",
                    id)).isEqualTo(1);

            for (int i = 1; i <= 7; i++) {
                assertThat(riffle.maintenance().rotateNow(Ring.LEASE).block(TIMEOUT)).as("rotation %d", i)
                        .isEqualTo(RotateOutcome.ROTATED);
                assertThat(cursorSlot(db)).isEqualTo(i);
            }
            // The next slot is slot 0, and it still holds the live lease.
            assertThat(riffle.maintenance().rotateNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(RotateOutcome.SKIPPED_BUSY);
            assertThat(cursorSlot(db)).isEqualTo(7);
            assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(PruneOutcome.SKIPPED_LEASE_ACTIVE);
            assertThat(rows(db, 0)).as("prune must not touch a live lease").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE job_id = ?", id)).isEqualTo(1);

            job.complete().block(TIMEOUT);
            assertThat(rows(db, 0)).as("the lease ended").isZero();
            assertThat(bytes(db, 0)).as("the ended lease left its dead row in the child").isPositive();

            assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
            assertThat(rows(db, 0)).isZero();
            assertThat(bytes(db, 0)).as("truncated").isZero();
            assertThat(LeaseKit.terminal(db, id, "completed")).as("the completion is not lost with the lease").isEqualTo(1);

            // Nothing left: no rows, no pages.
            assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(TIMEOUT)).isEqualTo(PruneOutcome.NOOP);
            assertThat(cursorSlot(db)).isEqualTo(7);
        } finally {
            LeaseKit.close(riffle);
        }
    }
}
