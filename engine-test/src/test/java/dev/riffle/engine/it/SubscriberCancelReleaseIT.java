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
        long releasedBefore = released(db);
        try {
            List<Long> ids = Engines.enqueue(riffle, QUEUE, 10);
            Queue<Job> delivered = new ConcurrentLinkedQueue<>();
            try (Connection blocker = db.openJdbc()) {
                // The subscriber cancels while its claim is in flight.
                Disposable subscription = subscribeWithClaimHeld(db, riffle, QUEUE, blocker, delivered);
                subscription.dispose();
                blocker.commit();
            }
            Engines.awaitTrue("the late claim released", () -> released(db) - releasedBefore == 10);
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

    /**
     * The subscriber cancels mid-claim and the engine closes at once: the close waits for the cancelled
     * subscription's claim to come back and flushes its releases before the pool goes. Two things broke this: a
     * cancelled subscription left the engine's list of live loops at once, so the close did not wait for its claim
     * (the close was done within the second the claim was held); and the close shut the completion batcher when it
     * was assembled, before any loop had quiesced, so releases queued after that were flushed to a closed pool
     * (0 of 40 released, "release of 40 undelivered jobs failed"). Either way the 40 jobs stayed open until rescue.
     */
    @Test
    void closingRightAfterACancelMidClaimStillReleasesTheClaimedJobs(TestDatabase db) throws Exception {
        closeWithAClaimInFlight(db, "cancel-close", true);
    }

    /**
     * The engine closes while a live subscription's claim is in flight: the subscription completes, and the jobs
     * the claim brings back after the stop are released and flushed before the pool goes. (This one passed in two
     * runs with the batcher shut early as well; it keeps the live path covered next to the cancelled one.)
     */
    @Test
    void closingWhileALiveSubscriptionsClaimIsInFlightReleasesTheClaimedJobs(TestDatabase db) throws Exception {
        closeWithAClaimInFlight(db, "live-close", false);
    }

    private static void closeWithAClaimInFlight(TestDatabase db, String queue, boolean cancelFirst) throws Exception {
        Riffle riffle = Engines.start(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false).build()));
        List<Long> ids;
        Queue<Job> delivered = new ConcurrentLinkedQueue<>();
        long releasedBefore = released(db);
        try {
            ids = Engines.enqueue(riffle, queue, 40);
            try (Connection blocker = db.openJdbc()) {
                Disposable subscription = subscribeWithClaimHeld(db, riffle, queue, blocker, delivered);
                if (cancelFirst) {
                    subscription.dispose();
                }
                var closing = riffle.close().toFuture();
                // Long enough for a close that does not wait for the claim to finish while the claim is still held.
                dev.riffle.engine.test.Await.pause(java.time.Duration.ofSeconds(1));
                assertThat(closing).as("the close waits for the subscription's claim").isNotDone();
                blocker.commit();
                closing.get(Engines.TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
                if (!cancelFirst) {
                    assertThat(subscription.isDisposed()).as("the close completed the live subscription").isTrue();
                }
            }
        } finally {
            Engines.close(riffle);
        }
        assertThat(delivered).as("nothing reaches a subscriber once the claim comes back after the stop").isEmpty();
        assertThat(db.queryLong("SELECT coalesce(sum(claimed_count), 0) FROM lease_claim_batches WHERE queue = ?", queue))
                .as("the claim did take the jobs").isEqualTo(40);
        assertThat(released(db) - releasedBefore).as("released by the closing engine").isEqualTo(40);
        Riffle again = Engines.start(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false).build()));
        try {
            assertThat(again.counts(queue).block(Engines.TIMEOUT).inFlight()).isZero();
            List<Job> got = again.subscribe(queue).take(40).collectList().block(Engines.TIMEOUT);
            assertThat(got).extracting(Job::id).containsExactlyInAnyOrderElementsOf(ids);
        } finally {
            Engines.close(again);
        }
    }

    /**
     * Holds the current claim slot's batch partition on {@code blocker} (a transaction left open) so the claim
     * statement stalls at its insert, subscribes, and returns once that claim is waiting on the lock: a claim in flight
     * until {@code blocker} commits.
     */
    private static Disposable subscribeWithClaimHeld(TestDatabase db, Riffle riffle, String queue, Connection blocker,
                                                     Queue<Job> delivered) throws Exception {
        int slot = (int) db.queryLong("SELECT slot FROM claim_ring_rotations ORDER BY generation DESC LIMIT 1");
        blocker.setAutoCommit(false);
        try (Statement st = blocker.createStatement()) {
            st.execute("LOCK TABLE lease_claim_batches_" + slot + " IN ACCESS EXCLUSIVE MODE");
        }
        Disposable subscription = riffle.subscribe(queue).subscribe(delivered::add);
        Engines.awaitTrue("claim waiting on the lock", () -> db.queryLong("SELECT count(*) FROM pg_stat_activity "
                + "WHERE wait_event_type = 'Lock' AND position('claim_ready' in query) > 0") == 1);
        return subscription;
    }

    private static long released(TestDatabase db) {
        return db.queryLong("SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches WHERE outcome = 'released'");
    }
}
