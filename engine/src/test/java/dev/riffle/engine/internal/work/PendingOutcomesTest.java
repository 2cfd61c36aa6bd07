package dev.riffle.engine.internal.work;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * The permit gate behind {@code work(...)}'s second stage: every admitted item's result is emitted once, at most
 * {@code max} items are between admission and delivery, a subscriber that stops requesting stops admission, and
 * completion, errors and cancellation travel as a {@code flatMap} would carry them.
 */
class PendingOutcomesTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Test
    void everyItemIsRecordedOnceAndTheBoundHoldsUnderConcurrency() {
        int items = 20_000;
        int max = 7;
        AtomicInteger between = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        Set<Integer> seen = ConcurrentHashMap.newKeySet();
        // Records finish on other threads, in random order and at random times: grants race releases.
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(max,
                i -> {
                    peak.accumulateAndGet(between.incrementAndGet(), Math::max);
                    return Mono.just(i).delayElement(Duration.ofNanos(ThreadLocalRandom.current().nextInt(50_000)),
                            Schedulers.parallel());
                },
                stage -> Flux.range(0, items)
                        .flatMap(i -> Mono.just(i).publishOn(Schedulers.parallel()).flatMap(stage::admit), 64, 1));

        StepVerifier.create(results.doOnNext(i -> between.decrementAndGet()), 0)
                .thenRequest(Long.MAX_VALUE)
                .thenConsumeWhile(i -> seen.add(i))
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(seen).hasSize(items);
        // A permit returns as its result is handed over, just before the subscriber's onNext (where this test
        // counts the delivery), so one more record may start while that onNext runs.
        assertThat(peak.get()).as("items between admission and delivery").isBetween(1, max + 1);
    }

    @Test
    void aWaiterIsWokenWhenTheLastPermitReturnsWhileItQueues() {
        // One permit, two items. The second item's admission fails to acquire; in that window (the seam) the first
        // record finishes and its permit returns, the only release there will ever be. The waiter queued just after
        // it must still be granted, or the results never complete.
        Sinks.One<Integer> first = Sinks.one();
        AtomicBoolean released = new AtomicBoolean();
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(1,
                i -> i == 0 ? first.asMono() : Mono.just(i),
                // Started once the subscriber has requested, so the first result is delivered (and its permit returned)
                // at once, inside the window, rather than buffered.
                stage -> Flux.range(0, 2).delaySubscription(Duration.ofMillis(100)).flatMap(stage::admit, 2, 1),
                () -> {
                    if (released.compareAndSet(false, true)) {
                        first.tryEmitValue(0);
                    }
                });

        StepVerifier.create(results).expectNext(0, 1).expectComplete().verify(Duration.ofSeconds(5));
        assertThat(released).as("the release ran inside the window").isTrue();
    }

    @Test
    void aSubscriberThatStopsRequestingStopsAdmission() {
        int max = 3;
        AtomicInteger admitted = new AtomicInteger();
        AtomicInteger handed = new AtomicInteger();
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(max,
                i -> {
                    admitted.incrementAndGet();
                    return Mono.just(i);
                },
                stage -> Flux.range(0, 100).doOnNext(i -> handed.incrementAndGet()).flatMap(stage::admit, 10, 1));

        StepVerifier.create(results, 0)
                .expectSubscription()
                .then(() -> {
                    assertThat(admitted).as("recorded with no demand").hasValue(max);
                    // Three admitted outcomes freed their handler slots; the ten slots now all wait for a permit.
                    assertThat(handed).as("handed to the handler stage").hasValue(10 + max);
                })
                .thenRequest(2)
                .expectNext(0, 1)
                .then(() -> assertThat(admitted).as("two permits came back").hasValue(max + 2))
                .then(() -> assertThat(handed).as("two more handler slots freed").hasValue(10 + max + 2))
                .thenRequest(Long.MAX_VALUE)
                .expectNextCount(98)
                .expectComplete()
                .verify(TIMEOUT);
        assertThat(admitted).hasValue(100);
    }

    @Test
    void theResultsCompleteOnlyAfterTheLastAdmittedOutcome() {
        Sinks.One<Integer> slow = Sinks.one();
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(4,
                i -> i == 2 ? slow.asMono() : Mono.just(i),
                stage -> Flux.range(1, 3).flatMap(stage::admit));

        StepVerifier.create(results)
                .expectNext(1, 3)
                .expectNoEvent(Duration.ofMillis(200))
                .then(() -> slow.tryEmitValue(2))
                .expectNext(2)
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void anErrorOfTheHandlerStageEndsTheResults() {
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(4, Mono::just,
                stage -> Flux.concat(Flux.range(1, 2).flatMap(stage::admit),
                        Flux.error(new IllegalStateException("claims failed"))));

        StepVerifier.create(results)
                .expectNext(1, 2)
                .expectErrorMessage("claims failed")
                .verify(TIMEOUT);
    }

    @Test
    void cancellingTheResultsCancelsTheHandlerStageButAdmittedOutcomesStillRun() {
        Sinks.One<Integer> slow = Sinks.one();
        AtomicBoolean handlersCancelled = new AtomicBoolean();
        List<Integer> recorded = new CopyOnWriteArrayList<>();
        Flux<Integer> results = PendingOutcomes.<Integer, Integer>run(4,
                i -> slow.asMono().map(x -> i).doOnNext(recorded::add),
                stage -> Flux.concat(Flux.just(7).flatMap(stage::admit), Flux.<Void>never())
                        .doOnCancel(() -> handlersCancelled.set(true)));

        StepVerifier.create(results)
                .expectSubscription()
                .thenCancel()
                .verify(TIMEOUT);
        assertThat(handlersCancelled).isTrue();
        slow.tryEmitValue(0);
        assertThat(recorded).containsExactly(7);
    }
}
