package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * DESIGN.md preface item 12: claims must not queue behind a prune's ACCESS EXCLUSIVE on a queue-ring child they do
 * not need, and going around a locked child must never skip the rows it holds. The lock is taken here the way
 * prune takes it, on the child of one slot, in an open transaction.
 */
@RiffleTest
class ClaimAroundPruneLockIT {

    private static Connection lockSegments(TestDatabase db, int slot) throws Exception {
        Connection c = db.openJdbc();
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
            st.execute("LOCK TABLE ready_segments_" + slot + " IN ACCESS EXCLUSIVE MODE");
        }
        return c;
    }

    @Test
    void aClaimGoesAroundAChildLockedForPruneAndNeverSkipsTheRowsALockedChildHolds(TestDatabase db) throws Exception {
        // "span" is one lane (one enqueue shard), so its two batches are positions of the same lane; with more
        // shards each batch could sit on a lane of its own and the second part would prove nothing.
        Riffle riffle = Fixtures.manual(db, b -> b.queue(QueueConfig.of("span").withEnqueueShards(1)));
        try {
            // 1. A child the lane does not use is locked (a prune truncating an inert slot): claims go on.
            List<Long> first = Fixtures.enqueue(riffle, "around", 10);
            int current = (int) db.queryLong("SELECT slot FROM queue_ring_rotations ORDER BY generation DESC LIMIT 1");
            int other = (current + 5) % 16;
            try (Connection prune = lockSegments(db, other)) {
                List<Job> got = riffle.subscribe("around").take(10).collectList().block(Duration.ofSeconds(20));
                assertThat(got).extracting(Job::id).containsExactlyInAnyOrderElementsOf(first);
                assertThat(riffle.stats().lockDetours()).as("claims went around the locked child").isPositive();
                prune.rollback();
            }

            // 2. The lane's rows span two slots and the older child is locked: nothing may be claimed past it.
            List<Long> older = Fixtures.enqueue(riffle, "span", 5);
            assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
            List<Long> newer = Fixtures.enqueue(riffle, "span", 5);
            int olderSlot = (int) db.queryLong("SELECT ready_slot FROM ready_entries WHERE job_id = ?", older.get(0));
            int newerSlot = (int) db.queryLong("SELECT ready_slot FROM ready_entries WHERE job_id = ?", newer.get(0));
            assertThat(newerSlot).isNotEqualTo(olderSlot);

            Queue<Job> delivered = new ConcurrentLinkedQueue<>();
            Disposable sub;
            try (Connection lock = lockSegments(db, olderSlot)) {
                sub = riffle.subscribe("span").subscribe(delivered::add);
                Fixtures.pause(Duration.ofSeconds(1));
                assertThat(delivered).as("claimed past rows a locked child holds").isEmpty();
                lock.rollback();
            }
            try {
                Fixtures.await("all ten delivered after the lock is gone", () -> delivered.size() >= 10);
                Fixtures.pause(Duration.ofMillis(300));
                Set<Long> ids = new HashSet<>();
                for (Job j : delivered) {
                    assertThat(ids.add(j.id())).as("delivered twice: " + j.id()).isTrue();
                    assertThat(j.attempt()).isEqualTo(1);
                }
                Set<Long> expected = new HashSet<>(older);
                expected.addAll(newer);
                assertThat(ids).isEqualTo(expected);
            } finally {
                sub.dispose();
            }
        } finally {
            Fixtures.close(riffle);
        }
    }
}
