package com.example.greetings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.ManualRiffle;
import dev.riffle.engine.test.RiffleAssertions;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestConfig;
import dev.riffle.engine.test.RiffleTestKit;
import dev.riffle.engine.test.RiffleTestKit.JobState;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The test kit's injected engine as a user writes it: no engine start-up code, a drain instead of a hand-counted
 * {@code take(n)}, state and queue assertions, and manual maintenance for a scheduled job.
 */
@RiffleTest
class GreetingKitTest implements RiffleTestConfig {

    private static final String QUEUE = "greetings";
    private static final String KIND = "greeting.send";

    @Override
    public void configure(RiffleConfig.Builder builder) {
        builder.queue(QueueConfig.of(QUEUE).withDlq(true));
    }

    @Test
    void drainHandlesEveryJobOnce(Riffle riffle, RiffleTestKit kit) {
        assertSame(riffle, kit.riffle());
        List<Long> ids = kit.enqueueMany(IntStream.range(0, 5)
                .mapToObj(i -> NewJob.builder(KIND).queue(QUEUE).args("{\"to\":\"user-" + i + "@example.com\"}").build())
                .toList()).block();
        RiffleAssertions.assertEnqueued(riffle, QUEUE, 5).block();

        List<JobResult> results = kit.drain(Map.of(KIND, job -> Mono.empty()), QUEUE).block();

        assertEquals(Set.copyOf(ids), results.stream().map(JobResult::jobId).collect(Collectors.toSet()));
        assertEquals(5, results.size(), "each job handled once: " + results);
        results.forEach(r -> assertTrue(r.accepted(), "recorded: " + r));
        RiffleAssertions.assertCompleted(riffle, QUEUE, 5).block();
        assertEquals(JobState.COMPLETED, kit.awaitState(ids.get(0), JobState.COMPLETED).block());
    }

    @Test
    void aFailingJobEndsInTheDlq(RiffleTestKit kit) {
        long id = kit.enqueue(NewJob.builder("greeting.bounce").queue(QUEUE).build()).block();

        kit.drain(Map.of("greeting.bounce", job -> Mono.just(JobOutcome.fail("mailbox gone"))), QUEUE).block();

        assertEquals(JobState.IN_DLQ, kit.awaitState(id, JobState.IN_DLQ).block());
        RiffleAssertions.assertInDlq(kit.riffle(), QUEUE, id).block();
    }

    @Test
    void aScheduledGreetingWaitsForPromotion(ManualRiffle manual) {
        // Only the manual engine runs in this test: an injected Riffle would be a maintenance leader on the same
        // schema and promote the job on its own.
        Instant runAt = manual.databaseNow().plusSeconds(1);
        long id = manual.kit().enqueue(NewJob.builder(KIND).queue("later").runAt(runAt).build()).block();
        assertEquals(List.of(), manual.kit().drain(Map.of(KIND, job -> Mono.empty()), "later").block());

        manual.awaitDatabaseTime(runAt, Duration.ofSeconds(10));
        assertEquals(1, manual.promoteNow().block());

        assertEquals(id, manual.kit().drain(Map.of(KIND, job -> Mono.empty()), "later").block().get(0).jobId());
    }
}
