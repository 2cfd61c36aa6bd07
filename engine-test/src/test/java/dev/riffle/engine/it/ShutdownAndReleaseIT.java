package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/** Graceful shutdown and release: nothing is left open for rescue, nothing is lost, connections are closed. */
@RiffleTest
class ShutdownAndReleaseIT {

    @Test
    void releasedAttemptsAreReadyAgainAtOnceWithoutConsumingAnAttempt(TestDatabase db) {
        Riffle riffle = Engines.start(db, b -> b.maintenance(dev.riffle.engine.MaintenanceConfig.builder().enabled(false).build()));
        try {
            Engines.enqueue(riffle, "rel", 3);
            List<Job> jobs = riffle.subscribe("rel").take(3).collectList().block(Engines.TIMEOUT);
            for (Job j : jobs) {
                ((ClaimedJob) j).release().block(Engines.TIMEOUT);
            }
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_closure_batches c, unnest(c.receipt_ids) r "
                    + "WHERE c.outcome = 'released' AND r IN (SELECT unnest(receipt_ids) FROM lease_claim_batches WHERE queue = 'rel')"))
                    .isEqualTo(3);
            // Ready again without any promotion pass (maintenance is off here).
            assertThat(riffle.counts("rel").block(Engines.TIMEOUT).available()).isEqualTo(3);
            List<Job> again = riffle.subscribe("rel").take(3).collectList().block(Engines.TIMEOUT);
            assertThat(again).extracting(Job::id).containsExactlyInAnyOrderElementsOf(jobs.stream().map(Job::id).toList());
            assertThat(again).allSatisfy(j -> {
                assertThat(j.attempt()).as("release gives the attempt back").isEqualTo(1);
                assertThat(j.runLease()).isEqualTo(2);
            });
            // The released attempts are closed: a late completion from them is rejected.
            assertThat(jobs.get(0).complete().then(Mono.just(true)).onErrorReturn(false).block(Engines.TIMEOUT)).isFalse();
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void gracefulShutdownUnderLoadLeavesNothingOpenAndLosesNothing(TestDatabase db) {
        int n = 1500;
        Riffle riffle = Engines.start(db, b -> b.applicationName("riffle-shutdown-it"));
        Engines.enqueue(riffle, "gs", n);
        AtomicInteger handled = new AtomicInteger();
        Disposable work = riffle.work(Map.of("test.noop", job -> Mono.delay(Duration.ofMillis(5))
                                .doOnNext(t -> handled.incrementAndGet()).thenReturn(JobOutcome.complete())), 32, "gs")
                .subscribe();
        long deadline = System.nanoTime() + Engines.TIMEOUT.toNanos();
        while (handled.get() < 300 && System.nanoTime() < deadline) {
            Mono.delay(Duration.ofMillis(20)).block();
        }
        Duration grace = Duration.ofSeconds(10);
        long t0 = System.nanoTime();
        riffle.shutdownGracefully(grace).block(grace.plusSeconds(20));
        Duration took = Duration.ofNanos(System.nanoTime() - t0);
        work.dispose();

        assertThat(took).isLessThan(grace.plusSeconds(5));
        assertThat(riffle.stats().inFlight()).isZero();
        // Nothing left for rescue: every claim is closed (completed or released).
        assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.receipt_ids) r "
                + "WHERE NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches c WHERE c.claim_slot = b.claim_slot "
                + "AND c.receipt_ranges @> r)")).isZero();
        // Nothing lost: every job is completed exactly once or available again.
        long completed = db.queryLong("SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE queue = 'gs'");
        assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'gs'")).isEqualTo(completed);
        Riffle after = Engines.start(db);
        try {
            long available = after.counts("gs").block(Engines.TIMEOUT).available();
            assertThat(completed + available).isEqualTo(n);
            assertThat(completed).isGreaterThanOrEqualTo(300);
        } finally {
            Engines.close(after);
        }
        // Every connection of the stopped engine is gone.
        Engines.awaitTrue("connections closed", () -> db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'riffle-shutdown-it.%'") == 0);
    }
}
