package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The stale-writer guard: one closure per attempt, duplicates and wrong run leases rejected with a typed error. */
@RiffleTest
class CompletionGuardIT {

    private static long closuresOf(TestDatabase db, ClaimedJob job) {
        return db.queryLong("SELECT count(*) FROM lease_claim_closure_batches WHERE receipt_ranges @> ?::bigint",
                job.receipt().receiptId());
    }

    @Test
    void aSecondCompletionAndAWrongRunLeaseAreRejectedAndLeaveOneClosure(TestDatabase db) {
        Riffle riffle = Engines.start(db);
        try {
            Engines.enqueue(riffle, "guard", 1);
            ClaimedJob job = (ClaimedJob) riffle.subscribe("guard").blockFirst(Engines.TIMEOUT);

            // A completion carrying the wrong run lease is stale, and it writes nothing.
            Receipt r = job.receipt();
            Receipt forged = new Receipt(r.claimSlot(), r.batchId(), r.batchIndex(), r.receiptId(),
                    r.jobId(), r.runLease() + 1);
            assertThatThrownBy(() -> Internals.completer(riffle).finish(forged, dev.riffle.engine.api.JobOutcome.complete(), false).block(Engines.TIMEOUT))
                    .isInstanceOfSatisfying(AttemptRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.STALE));
            assertThat(closuresOf(db, job)).isZero();

            job.complete().block(Engines.TIMEOUT);
            assertThat(closuresOf(db, job)).isEqualTo(1);

            assertThatThrownBy(() -> job.complete().block(Engines.TIMEOUT))
                    .isInstanceOfSatisfying(AttemptRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
            assertThat(closuresOf(db, job)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", job.id())).isEqualTo(1);
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void racingCompletionsOfTheSameAttemptFromTwoEnginesCloseItExactlyOnce(TestDatabase db) {
        int n = 300;
        Riffle a = Engines.start(db);
        Riffle b = Engines.start(db);
        try {
            Engines.enqueue(a, "race", n);
            List<Job> jobs = a.subscribe("race").take(n).collectList().block(Engines.TIMEOUT);
            assertThat(jobs).hasSize(n);
            AtomicInteger accepted = new AtomicInteger();
            AtomicInteger rejected = new AtomicInteger();
            // Each attempt is completed at the same moment through two independent batchers (two engines), so
            // the two completions travel in different transactions and only the per-attempt lock can order them.
            List<Mono<Void>> racers = new ArrayList<>();
            for (Job j : jobs) {
                ClaimedJob cj = (ClaimedJob) j;
                for (Riffle engine : List.of(a, b)) {
                    racers.add(Internals.completer(engine).finish(cj.receipt(), dev.riffle.engine.api.JobOutcome.complete(), false)
                            .doOnSuccess(v -> accepted.incrementAndGet())
                            .onErrorResume(AttemptRejectedException.class, e -> {
                                rejected.incrementAndGet();
                                return Mono.empty();
                            }));
                }
            }
            Flux.merge(Flux.fromIterable(racers), 64).blockLast(Engines.TIMEOUT);

            assertThat(accepted.get()).isEqualTo(n);
            assertThat(rejected.get()).isEqualTo(n);
            assertThat(db.queryLong("SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches")).isEqualTo(n);
            assertThat(db.queryLong("SELECT count(*) FROM (SELECT r FROM lease_claim_closure_batches c, unnest(c.receipt_ids) r "
                    + "GROUP BY r HAVING count(*) > 1) d")).as("receipts closed twice").isZero();
            assertThat(db.queryLong("SELECT coalesce(sum(completed_count), 0) FROM receipt_completion_batches")).isEqualTo(n);
        } finally {
            Engines.close(a, b);
        }
    }
}
