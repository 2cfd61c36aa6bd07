package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;

/**
 * Issue #10 item 7: the subscriber cancels while one claim's jobs are being emitted (here from inside the first
 * {@code onNext}, which makes the timing exact). The jobs after the cancel can no longer be emitted; each is
 * released (closure 'released', ready again at once) instead of being handed to a subscriber that left, where it
 * would be dropped and wait for rescue.
 */
@RiffleTest
class EmitCancelReleaseIT {

    private static final String QUEUE = "cancel-between";

    @Test
    void cancellingBetweenTwoJobsOfOneClaimReleasesTheRest(TestDatabase db) {
        Riffle riffle = Engines.start(db, b -> b.maxClaimBatch(10)
                .maintenance(MaintenanceConfig.builder().enabled(false).build()));
        try {
            Engines.enqueue(riffle, QUEUE, 10);
            Queue<Job> delivered = new ConcurrentLinkedQueue<>();
            // take(1, false) passes the unbounded demand through, so one claim takes up to 10 jobs, and it cancels
            // upstream as the first of them arrives.
            riffle.subscribe(QUEUE).doOnNext(delivered::add).take(1, false).blockLast(Engines.TIMEOUT);
            long claimed = db.queryLong("SELECT coalesce(sum(claimed_count), 0) FROM lease_claim_batches WHERE queue = ?", QUEUE);
            assertThat(claimed).as("one claim took several jobs").isGreaterThan(1);
            assertThat(delivered).as("nothing reaches the subscriber after its cancel").hasSize(1);
            Engines.awaitTrue("the rest of the claim released", () -> db.queryLong("SELECT coalesce(sum(closed_count), 0) "
                    + "FROM lease_claim_closure_batches WHERE outcome = 'released'") == claimed - 1);
            assertThat(riffle.counts(QUEUE).block(Engines.TIMEOUT).available()).as("ready again at once").isEqualTo(9);
        } finally {
            Engines.close(riffle);
        }
    }
}
