package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A drain ends only after the result of every attempt its handlers started has arrived. The queue's counts show an
 * outcome as soon as its flush commits, a moment before {@code work(...)} emits its result; the drain's
 * {@code started == finished} guard covers that window. The window is microseconds on its own (40 rounds without
 * the guard passed), so this test widens it: results reach the drain's bookkeeping 150 ms late, six poll intervals.
 * Without the guard (idle = counts only) the drain ends before the delayed results arrive and returns fewer ids.
 */
@RiffleTest
class DrainCompletenessIT {

    @Test
    void aDrainWaitsForTheResultOfEveryStartedAttempt(Riffle riffle) {
        RiffleTestKit kit = RiffleTestKit.withResultTap(riffle,
                results -> results.concatMap(r -> Mono.delay(Duration.ofMillis(150)).thenReturn(r)));
        for (int round = 0; round < 3; round++) {
            String queue = "round" + round;
            List<Long> ids = kit.enqueueMany(IntStream.range(0, 3)
                    .mapToObj(i -> NewJob.builder("quick").queue(queue).build()).toList()).block();

            List<JobResult> results = kit.drain(Map.of("quick", job -> Mono.empty()), queue).block();

            assertThat(results).as("round %d", round).extracting(JobResult::jobId)
                    .containsExactlyInAnyOrderElementsOf(ids);
        }
    }
}
