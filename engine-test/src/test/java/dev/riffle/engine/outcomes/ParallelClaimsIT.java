package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A subscription whose demand is larger than one claim keeps up to {@code claimConcurrency} claims in flight while
 * claims come back full, each on its own lane (enqueue shard); every job is still claimed exactly once. A window that
 * one claim can hold is claimed by one claim at a time: splitting it would pay a claim's fixed cost twice.
 */
@RiffleTest
class ParallelClaimsIT extends ProbeIT {

    private int drainWith(String queue, int claimConcurrency) {
        return drainWith(queue, claimConcurrency, 8, 50);
    }

    /** Drains 4 x perCall jobs (one enqueue transaction, so one lane, per call) with a demand of 64. */
    private int drainWith(String queue, int claimConcurrency, int maxClaimBatch, int perCall) {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of(queue).withEnqueueShards(4))
                .maxClaimBatch(maxClaimBatch).claimConcurrency(claimConcurrency));
        try {
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < perCall; i++) {
                jobs.add(NewJob.builder("k").queue(queue).build());
            }
            Set<Long> ids = new HashSet<>();
            // Four calls: four transactions, spread over the shards.
            for (int i = 0; i < 4; i++) {
                ids.addAll(riffle.client().enqueueMany(jobs).block(TIMEOUT));
            }
            List<Job> got = riffle.subscribe(queue).flatMap((Job j) -> j.complete().thenReturn(j), 64, 1)
                    .take(ids.size()).collectList().block(TIMEOUT);
            Set<Long> seen = new HashSet<>();
            for (Job j : got) {
                assertThat(seen.add(j.id())).as("job %d delivered twice", j.id()).isTrue();
            }
            assertThat(seen).isEqualTo(ids);
            for (long id : ids) {
                assertThat(claimsOf(db, id)).as("claims of job %d", id).isEqualTo(1);
            }
            return riffle.stats().peakClaimsRunning();
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void fullClaimsBringASecondClaimAlongside() {
        assertThat(drainWith("pa", 2)).as("claims in flight at once, at most").isEqualTo(2);
    }

    @Test
    void oneClaimAtATimeWhenTheConcurrencyIsOne() {
        assertThat(drainWith("pb", 1)).as("claims in flight at once, at most").isEqualTo(1);
    }

    @Test
    void aWindowOneClaimHoldsIsClaimedOneClaimAtATime() {
        // Demand 64 against a batch limit of 128, and lanes of 200 jobs, so every claim comes back full: a second
        // claim alongside would only split the window.
        assertThat(drainWith("pc", 2, 128, 200)).as("claims in flight at once, at most").isEqualTo(1);
    }
}
