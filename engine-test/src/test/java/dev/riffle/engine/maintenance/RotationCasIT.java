package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** Rotation appends to the ledger as a CAS, and never re-enters a slot that still holds rows. */
@RiffleTest(claimSlots = 2, queueSlots = 4)
class RotationCasIT {

    @Test
    void rotationIsACasAndStopsWhenTheNextSlotIsNotPruned(TestDatabase db) {
        Riffle a = Fixtures.manual(db);
        Riffle b = Fixtures.manual(db);
        try {
            Fixtures.enqueue(a, "cas", 1);
            Fixtures.claim(a, "cas", 1); // one open claim in claim slot 0
            List<RotateOutcome> outcomes = Flux.merge(a.maintenance().rotateNow(Ring.CLAIM), b.maintenance().rotateNow(Ring.CLAIM))
                    .collectList().block(Fixtures.TIMEOUT);
            assertThat(outcomes).containsOnlyOnce(RotateOutcome.ROTATED);
            assertThat(db.queryLong("SELECT max(generation) FROM claim_ring_rotations")).isEqualTo(1);
            // Next slot (0) still holds the open claim: rotation must not re-enter it.
            assertThat(a.maintenance().rotateNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.SKIPPED_BUSY);
            assertThat(db.queryLong("SELECT max(generation) FROM claim_ring_rotations")).isEqualTo(1);
        } finally {
            Fixtures.close(a, b);
        }
    }
}
