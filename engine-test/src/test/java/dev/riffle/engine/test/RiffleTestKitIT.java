package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTestKit.JobState;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Drain, await and the assertion helpers on an injected engine. */
@RiffleTest
class RiffleTestKitIT implements RiffleTestConfig {

    @Override
    public void configure(RiffleConfig.Builder builder) {
        builder.queue(QueueConfig.of("dead").withDlq(true)).queue(QueueConfig.of("plain").withDlq(false));
    }

    @Test
    void drainRunsEveryReadyJobOnceAndEndsWhenTheQueueIsEmpty(RiffleTestKit kit) {
        Set<Long> handled = ConcurrentHashMap.newKeySet();
        AtomicInteger calls = new AtomicInteger();
        List<Long> ids = kit.enqueueMany(java.util.stream.IntStream.range(0, 40)
                .mapToObj(i -> NewJob.builder("count").queue("drain").build()).toList()).block();

        StepVerifier.create(kit.drain(Map.of("count", job -> {
                    calls.incrementAndGet();
                    handled.add(job.id());
                    return Mono.delay(Duration.ofMillis(job.id() % 5)).then(Mono.empty());
                }), "drain"))
                .assertNext(results -> {
                    assertThat(results).extracting(JobResult::jobId).containsExactlyInAnyOrderElementsOf(ids);
                    assertThat(results).allSatisfy(r -> assertThat(r.accepted()).isTrue());
                })
                .verifyComplete();
        assertThat(calls).hasValue(40);
        assertThat(handled).containsExactlyInAnyOrderElementsOf(ids);
        StepVerifier.create(RiffleAssertions.assertCompleted(kit.riffle(), "drain", 40)).verifyComplete();
        StepVerifier.create(RiffleAssertions.assertIdle(kit.riffle(), "drain", Duration.ofSeconds(5))).verifyComplete();
        // An empty queue drains to nothing at once.
        StepVerifier.create(kit.drain(Map.of("count", job -> Mono.empty()), "drain")).expectNext(List.of())
                .verifyComplete();
    }

    @Test
    void drainFailsWithTheCountsWhenTheQueueDoesNotEmptyInTime(RiffleTestKit kit) {
        kit.enqueue(NewJob.builder("stuck").queue("stuck").build()).block();

        StepVerifier.create(kit.drain(Map.of("stuck", job -> Mono.never()), 1, Duration.ofMillis(800), "stuck"))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(AssertionError.class)
                        .hasMessageContaining("not drained within").hasMessageContaining("inFlight=1"))
                .verify(Duration.ofSeconds(30));
    }

    @Test
    void awaitStateFollowsEachOutcome(RiffleTestKit kit) {
        long done = kit.enqueue(NewJob.builder("done").queue("plain").build()).block();
        long failed = kit.enqueue(NewJob.builder("fail").queue("plain").build()).block();
        long dead = kit.enqueue(NewJob.builder("fail").queue("dead").build()).block();
        long exhausted = kit.enqueue(NewJob.builder("boom").queue("plain").maxAttempts(1).build()).block();
        long quit = kit.enqueue(NewJob.builder("quit").queue("plain").build()).block();
        long later = kit.enqueue(NewJob.builder("later").queue("plain").build()).block();
        Map<String, dev.riffle.engine.api.JobHandler> handlers = Map.of(
                "done", job -> Mono.empty(),
                "fail", job -> Mono.just(JobOutcome.fail("no")),
                "boom", job -> Mono.error(new IllegalStateException("boom")),
                "quit", job -> Mono.just(JobOutcome.cancel("not wanted")),
                "later", job -> Mono.just(JobOutcome.retry("again", Duration.ofHours(1))));

        kit.drain(handlers, "plain", "dead").block();

        StepVerifier.create(kit.awaitState(done, JobState.COMPLETED)).expectNext(JobState.COMPLETED).verifyComplete();
        StepVerifier.create(kit.awaitState(failed, JobState.FAILED)).expectNext(JobState.FAILED).verifyComplete();
        StepVerifier.create(kit.awaitState(dead, JobState.IN_DLQ)).expectNext(JobState.IN_DLQ).verifyComplete();
        StepVerifier.create(kit.awaitState(exhausted, JobState.FAILED)).expectNext(JobState.FAILED).verifyComplete();
        StepVerifier.create(kit.awaitState(quit, JobState.CANCELLED)).expectNext(JobState.CANCELLED).verifyComplete();
        StepVerifier.create(kit.awaitState(later, JobState.SCHEDULED)).expectNext(JobState.SCHEDULED).verifyComplete();
        StepVerifier.create(RiffleAssertions.assertInDlq(kit.riffle(), "dead", dead)).verifyComplete();
        StepVerifier.create(RiffleAssertions.assertNotInDlq(kit.riffle(), "plain", failed)).verifyComplete();
        // The retried job waits in the deferred backlog: enqueued (scheduled), not ready.
        StepVerifier.create(RiffleAssertions.assertEnqueued(kit.riffle(), "plain", 1)).verifyComplete();
        StepVerifier.create(kit.cancel(later)).expectNext(CancelResult.CANCELLED_SCHEDULED).verifyComplete();
        StepVerifier.create(kit.awaitState(later, JobState.CANCELLED)).expectNext(JobState.CANCELLED).verifyComplete();
        StepVerifier.create(RiffleAssertions.assertEnqueued(kit.riffle(), "plain", 0)).verifyComplete();
    }

    @Test
    void awaitsTimeOutWithWhatTheyWaitedFor(RiffleTestKit kit) {
        long id = kit.enqueue(NewJob.builder("never").queue("idle").build()).block();

        StepVerifier.create(kit.awaitState(id, JobState.COMPLETED, Duration.ofMillis(300)))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(AssertionError.class)
                        .hasMessageContaining("job " + id + " to be COMPLETED").hasMessageContaining("last known: nothing"))
                .verify(Duration.ofSeconds(10));
        StepVerifier.create(RiffleAssertions.assertCompleted(kit.riffle(), "idle", 1, Duration.ofMillis(300)))
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(AssertionError.class)
                        .hasMessageContaining("completed == 1").hasMessageContaining("available=1"))
                .verify(Duration.ofSeconds(10));
        StepVerifier.create(RiffleAssertions.assertInDlq(kit.riffle(), "idle", id, Duration.ofMillis(300)))
                .expectError(AssertionError.class)
                .verify(Duration.ofSeconds(10));
    }

    @Test
    void backgroundWorkIsAwaitedById(RiffleTestKit kit) {
        kit.runInBackground(Map.of("bg", job -> Mono.empty()), "bg");
        long id = kit.enqueue(NewJob.builder("bg").queue("bg").build()).block();

        StepVerifier.create(kit.awaitResult(id, JobResult::accepted, Duration.ofSeconds(30)))
                .assertNext(r -> assertThat(r.outcome()).isInstanceOf(JobOutcome.Complete.class))
                .verifyComplete();
        StepVerifier.create(kit.awaitState(id, JobState.COMPLETED)).expectNext(JobState.COMPLETED).verifyComplete();
    }

    @Test
    void awaitStateSeesWhatTheEngineDidOutsideTheKit(RiffleTestKit kit) {
        // Enqueued, handled and cancelled without the kit: its states come from admin().job(id), not its records.
        Riffle riffle = kit.riffle();
        long done = riffle.client().enqueue(NewJob.builder("outside").queue("outside").build()).block();
        long cancelled = riffle.client().enqueue(NewJob.builder("outside").queue("outside-later")
                .runAt(Instant.now().plusSeconds(3600)).build()).block();
        StepVerifier.create(kit.awaitState(cancelled, JobState.SCHEDULED)).expectNext(JobState.SCHEDULED)
                .verifyComplete();
        var work = riffle.work(Map.of("outside", job -> Mono.empty()), 2, "outside").subscribe();
        try {
            StepVerifier.create(kit.awaitState(done, JobState.COMPLETED)).expectNext(JobState.COMPLETED)
                    .verifyComplete();
        } finally {
            work.dispose();
        }
        assertThat(riffle.admin().cancel(cancelled).block()).isNotNull();
        StepVerifier.create(kit.awaitState(cancelled, JobState.CANCELLED)).expectNext(JobState.CANCELLED)
                .verifyComplete();
    }

    @Test
    void injectedEngineRunsMaintenanceSoAScheduledJobRunsWhenDue(RiffleTestKit kit) {
        Riffle riffle = kit.riffle();
        long id = kit.enqueue(NewJob.builder("soon").queue("soon").runAt(Instant.now().plusMillis(500)).build()).block();
        kit.runInBackground(Map.of("soon", job -> Mono.empty()), "soon");

        StepVerifier.create(kit.awaitState(id, JobState.COMPLETED)).expectNext(JobState.COMPLETED).verifyComplete();
        assertThat(riffle.maintenance().isLeader()).isTrue();
    }

    @Test
    void invalidInputIsRefusedClearly(RiffleTestKit kit) {
        assertThatThrownBy(() -> kit.drain(Map.of(), 1, Duration.ZERO, "q"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
        StepVerifier.create(kit.drain(Map.of())).expectError(IllegalArgumentException.class).verify();
        StepVerifier.create(kit.drain(Map.of(), "bad queue"))
                .expectError(dev.riffle.engine.api.InvalidJobException.class).verify();
    }
}
