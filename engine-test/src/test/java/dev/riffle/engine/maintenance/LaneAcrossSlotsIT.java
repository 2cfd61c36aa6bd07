package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.ManualRiffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * One lane whose segments sit in several queue-ring slots: the claim finds the segment holding its cursor wherever
 * it is, and never takes a later segment of the current slot for the lane's next rows (lane_segment looks in the
 * current slot first, R__30_claim.sql). Taking the current slot's segment would move the cursor past the older
 * slots' rows as if they were dead reservations: those jobs would never be claimed.
 */
@RiffleTest
class LaneAcrossSlotsIT implements RiffleTestConfig {

    private static final Map<String, JobHandler> NOOP = Map.of("lap", job -> Mono.empty());

    @Override
    public void configure(RiffleConfig.Builder builder) {
        // One shard: every job of the queue is on one lane, so lane order is enqueue order.
        builder.queue(QueueConfig.of("laps").withEnqueueShards(1));
    }

    @Test
    void everyJobOfALaneSpreadOverThreeSlotsIsClaimedInLaneOrder(ManualRiffle manual) {
        List<Long> ids = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            ids.addAll(manual.kit().enqueueMany(List.of(NewJob.builder("lap").queue("laps").build(),
                    NewJob.builder("lap").queue("laps").build())).block());
            if (round < 2) {
                StepVerifier.create(manual.riffle().maintenance().rotateNow(Ring.QUEUE))
                        .expectNext(RotateOutcome.ROTATED).verifyComplete();
            }
        }
        // The first claim starts in the oldest slot while the current slot already holds the lane's last segment.
        StepVerifier.create(manual.kit().drain(NOOP, "laps"))
                .assertNext(results -> assertThat(results).extracting(JobResult::jobId)
                        .containsExactlyInAnyOrderElementsOf(ids))
                .verifyComplete();
        assertThat(manual.kit().drain(NOOP, "laps").block()).as("nothing left").isEmpty();
    }
}
