package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Prune under a long reader: a REPEATABLE READ transaction holding a lock on the sealed partition makes prune give
 * up within the lock timeout, claim and complete keep working meanwhile, and the slot is pruned after release.
 */
@RiffleTest(claimSlots = 2, queueSlots = 4)
class PruneUnderReaderIT {

    @Test
    void pruneGivesUpQuicklyWhileAReaderHoldsTheSlotAndPrunesAfterwards(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db);
        try {
            Fixtures.enqueue(riffle, "lr", 20);
            Flux.fromIterable(Fixtures.claim(riffle, "lr", 10)).concatMap(Job::complete, 1).blockLast(Fixtures.TIMEOUT);
            assertThat(riffle.maintenance().rotateNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);

            try (Connection reader = db.openJdbc()) {
                reader.setAutoCommit(false);
                try (Statement st = reader.createStatement()) {
                    st.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                    st.execute("SELECT count(*) FROM lease_claim_batches_0");
                }
                long t0 = System.nanoTime();
                PruneOutcome blocked = riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT);
                Duration took = Duration.ofNanos(System.nanoTime() - t0);
                assertThat(blocked).isEqualTo(PruneOutcome.BLOCKED);
                assertThat(took).as("prune waited only for its lock timeout").isLessThan(Duration.ofSeconds(3));
                assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches_0")).isEqualTo(1);

                // Hot path unaffected while the reader still holds its lock: claims go to the current slot.
                List<Job> more = Fixtures.claim(riffle, "lr", 10);
                Flux.fromIterable(more).concatMap(Job::complete, 1).blockLast(Duration.ofSeconds(20));
                assertThat(more).hasSize(10);
                reader.rollback();
            }
            assertThat(riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches_0")
                    + db.queryLong("SELECT count(*) FROM lease_claim_closure_batches_0")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'lr'")).isEqualTo(20);
        } finally {
            Fixtures.close(riffle);
        }
    }
}
