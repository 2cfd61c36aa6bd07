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
 * claims come back full, each on its own lane (enqueue shard); every job is still claimed exactly once.
 */
@RiffleTest
class ParallelClaimsIT extends ProbeIT {

    private int drainWith(String queue, int claimConcurrency) {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of(queue).withEnqueueShards(4))
                .maxClaimBatch(8).claimConcurrency(claimConcurrency));
        try {
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                jobs.add(NewJob.builder("k").queue(queue).build());
            }
            Set<Long> ids = new HashSet<>();
            // Four calls of 50: four transactions, spread over the shards.
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
}
