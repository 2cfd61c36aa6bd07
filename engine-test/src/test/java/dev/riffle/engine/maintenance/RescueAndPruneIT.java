package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** RELIABILITY S: a sealed claim slot with open claims is never truncated; rescue closes them; prune then truncates. */
@RiffleTest(claimSlots = 2, queueSlots = 4)
class RescueAndPruneIT {

    @Test
    void aSealedSlotWithOpenClaimsIsNotTruncatedUntilRescueClosesThem(TestDatabase db) {
        Riffle riffle = Fixtures.manual(db);
        try {
            List<Long> ids = Fixtures.enqueue(riffle, "rp", 6);
            // A "dead worker": three attempts claimed and never finished.
            List<Job> dead = Fixtures.claim(riffle, "rp", 3);
            assertThat(riffle.maintenance().rotateNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
            assertThat(riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.SKIPPED_OPEN_CLAIMS);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches_0")).isEqualTo(1);

            // Prune hammers the slot while rescue closes the claims; it may truncate only after they are closed.
            AtomicBoolean rescued = new AtomicBoolean();
            List<PruneOutcome> early = new java.util.concurrent.CopyOnWriteArrayList<>();
            var pruner = Flux.interval(Duration.ofMillis(5), Schedulers.single()).onBackpressureDrop()
                    .concatMap(t -> riffle.maintenance().pruneNow(Ring.CLAIM)
                            .doOnNext(o -> {
                                if (o == PruneOutcome.PRUNED && !rescued.get()) {
                                    early.add(o);
                                }
                            }), 1)
                    .take(Duration.ofMillis(800))
                    .then()
                    .toFuture();
            Fixtures.pause(Duration.ofMillis(100));
            List<RescuedAttempt> r = riffle.maintenance().rescueStaleNow(Duration.ofMillis(1)).block(Fixtures.TIMEOUT);
            rescued.set(true);
            Mono.fromFuture(pruner).block(Fixtures.TIMEOUT);
            assertThat(early).as("prune truncated before rescue closed the claims").isEmpty();
            assertThat(r).extracting(RescuedAttempt::jobId).containsExactlyInAnyOrderElementsOf(
                    dead.stream().map(Job::id).toList());
            assertThat(r).allSatisfy(a -> assertThat(a.disposition()).isEqualTo("retryable"));

            PruneOutcome last = riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT);
            assertThat(last).isIn(PruneOutcome.PRUNED, PruneOutcome.NOOP);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches_0")
                    + db.queryLong("SELECT count(*) FROM lease_claim_closure_batches_0")).isZero();

            // The dead worker's late completions are rejected; the rescued jobs run again and complete once.
            for (Job j : dead) {
                assertThat(j.complete().then(Mono.just(true)).onErrorReturn(false).block(Fixtures.TIMEOUT)).isFalse();
            }
            db.execute("UPDATE deferred_jobs SET run_at = now()");
            assertThat(riffle.maintenance().promoteNow().block(Fixtures.TIMEOUT)).isEqualTo(3);
            Set<Long> done = new HashSet<>();
            riffle.subscribe("rp").take(6).concatMap(j -> j.complete().thenReturn(j), 1)
                    .doOnNext(j -> assertThat(done.add(j.id())).as("delivered once: " + j.id()).isTrue())
                    .blockLast(Fixtures.TIMEOUT);
            assertThat(done).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'rp' AND state = 'completed'")).isEqualTo(6);
            assertThat(db.queryLong("SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE queue = 'rp'")).isEqualTo(6);
            assertThat(Fixtures.doubleClosures(db)).isZero();
            DoctorReport doctor = riffle.admin().doctor().block(Fixtures.TIMEOUT);
            assertThat(doctor.violations()).as("proof doctor").isEmpty();
            assertThat(doctor.openAttempts()).isEmpty();
        } finally {
            Fixtures.close(riffle);
        }
    }
}
