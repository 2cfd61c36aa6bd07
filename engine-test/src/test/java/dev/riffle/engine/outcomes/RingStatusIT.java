package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RingStatus;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code Maintenance.status()} reports the sealed slots SQL computes ({@code ring_sealed_slots}): every slot a rotation
 * initialized except the current one, oldest first, each one that the ring's rotation ledger really moved through.
 */
@RiffleTest
class RingStatusIT extends ProbeIT {

    private RingStatus queueRing(Riffle riffle) {
        return riffle.maintenance().status().filter(s -> s.ring() == Ring.QUEUE).blockFirst(TIMEOUT);
    }

    /** The last {@code k} slots the cursor left (all of {@code visited} but its last entry), oldest first. */
    private static List<Integer> tail(List<Integer> visited, int k) {
        List<Integer> left = visited.subList(0, visited.size() - 1);
        return left.subList(Math.max(0, left.size() - k), left.size());
    }

    @Test
    void sealedSlotsGrowOldestFirstBehindTheCursorAsTheRingRotates() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            RingStatus start = queueRing(riffle);
            int n = start.slotCount();
            List<Integer> visited = new ArrayList<>(List.of(start.currentSlot()));
            assertThat(start.sealedSlots()).as("generation %d", start.generation())
                    .hasSize((int) Math.min(start.generation(), n - 1));
            for (int i = 0; i < n - 1; i++) {
                // A job in the current slot keeps the ring from being idle, so the rotation moves the cursor.
                OutcomeKit.enqueue(riffle, NewJob.builder("filler").queue("ring-status").build());
                assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
                RingStatus s = queueRing(riffle);
                visited.add(s.currentSlot());
                assertThat(s.sealedSlots()).as("sealed slots at generation %d", s.generation())
                        .doesNotContain(s.currentSlot())
                        .hasSize((int) Math.min(s.generation(), n - 1))
                        // Oldest first: the slots the cursor left, in the order it left them (the history this test saw
                        // is the tail; a reused schema may have older sealed slots before it).
                        .endsWith(tail(visited, s.sealedSlots().size()).toArray(Integer[]::new));
                for (int slot : s.sealedSlots()) {
                    assertThat(db.queryLong("SELECT count(*) FROM queue_ring_rotations WHERE slot = ?", slot))
                            .as("slot %d was initialized by a rotation", slot).isPositive();
                }
            }
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
