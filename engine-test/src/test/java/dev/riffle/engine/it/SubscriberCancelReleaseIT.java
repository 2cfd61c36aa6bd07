package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * Issue #5: a subscriber that cancels its {@code Flux} while a claim for it is in flight gets nothing, and the jobs
 * that claim took are released (closure 'released', attempt not consumed) for immediate redelivery, not left open
 * until stale rescue.
 */
@RiffleTest
class SubscriberCancelReleaseIT {

    private static final String QUEUE = "cancel-mid";

    @Test
    void cancellingMidClaimReleasesTheClaimedJobsForImmediateRedelivery(TestDatabase db) throws Exception {
        Riffle riffle = Engines.start(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false).build()));
        try {
            List<Long> ids = Engines.enqueue(riffle, QUEUE, 10);
            int slot = (int) db.queryLong("SELECT slot FROM claim_ring_rotations ORDER BY generation DESC LIMIT 1");
            Queue<Job> delivered = new ConcurrentLinkedQueue<>();
            try (Connection blocker = db.openJdbc()) {
                // Hold the current claim slot's batch partition so the claim statement stalls at its insert: the
                // subscriber then cancels while its claim is in flight.
                blocker.setAutoCommit(false);
                try (Statement st = blocker.createStatement()) {
                    st.execute("LOCK TABLE lease_claim_batches_" + slot + " IN ACCESS EXCLUSIVE MODE");
                }
                Disposable subscription = riffle.subscribe(QUEUE).subscribe(delivered::add);
                Engines.awaitTrue("claim waiting on the lock", () -> db.queryLong("SELECT count(*) FROM pg_stat_activity "
                        + "WHERE wait_event_type = 'Lock' AND position('claim_ready' in query) > 0") == 1);
                subscription.dispose();
                blocker.commit();
            }
            Engines.awaitTrue("the late claim released", () -> db.queryLong("SELECT coalesce(sum(closed_count), 0) "
                    + "FROM lease_claim_closure_batches WHERE outcome = 'released'") == 10);
            assertThat(delivered).as("nothing reaches a subscriber that left").isEmpty();
            assertThat(db.queryLong("SELECT coalesce(sum(claimed_count), 0) FROM lease_claim_batches WHERE queue = ?", QUEUE))
                    .as("the claim did take the jobs").isEqualTo(10);
            // Ready again at once: maintenance (promotion) is off here.
            assertThat(riffle.counts(QUEUE).block(Engines.TIMEOUT).available()).isEqualTo(10);
            List<Job> again = riffle.subscribe(QUEUE).take(10).collectList().block(Engines.TIMEOUT);
            assertThat(again).extracting(Job::id).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(again).allSatisfy(j -> {
                assertThat(j.attempt()).as("a release does not consume the attempt").isEqualTo(1);
                assertThat(j.runLease()).isEqualTo(2);
            });
        } finally {
            Engines.close(riffle);
        }
    }
}
