package dev.riffle.engine.fault;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.fault.Completions;
import dev.riffle.engine.test.fault.Completions.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Subscriptions that complete every job they receive, with the bookkeeping a fault test reports: deliveries per
 * job, how each completion ended, and whether any subscription terminated (it never should while the engine
 * runs). Handlers only touch concurrent counters, so nothing blocks on the event loop.
 */
final class Drain implements AutoCloseable {
    private final Map<Long, AtomicInteger> deliveries = new ConcurrentHashMap<>();
    private final Map<Outcome, AtomicLong> outcomes = new EnumMap<>(Outcome.class);
    private final AtomicLong gaveUp = new AtomicLong();
    private final ConcurrentLinkedQueue<String> gaveUpErrors = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<Throwable> subscriptionErrors = new ConcurrentLinkedQueue<>();
    private final AtomicInteger subscriptionsEnded = new AtomicInteger();
    private final List<Disposable> subscriptions = new ArrayList<>();

    private Drain() {
        for (Outcome o : Outcome.values()) {
            outcomes.put(o, new AtomicLong());
        }
    }

    /**
     * Starts {@code perEngine} subscriptions on each engine, each running up to {@code concurrency} handlers that
     * wait {@code handlerTime} (simulated work) and then complete the job, retrying the call through faults.
     */
    static Drain start(List<Riffle> engines, String queue, int perEngine, int concurrency, Duration handlerTime) {
        Drain d = new Drain();
        for (Riffle r : engines) {
            for (int i = 0; i < perEngine; i++) {
                d.subscriptions.add(r.subscribe(queue)
                        .flatMap(job -> d.handle(job, handlerTime), concurrency, 1)
                        .subscribe(v -> {}, e -> {
                            d.subscriptionErrors.add(e);
                            d.subscriptionsEnded.incrementAndGet();
                        }, d.subscriptionsEnded::incrementAndGet));
            }
        }
        return d;
    }

    private Mono<Void> handle(Job job, Duration handlerTime) {
        deliveries.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet();
        Mono<Void> work = handlerTime.isZero() ? Mono.empty() : Mono.delay(handlerTime).then();
        return work.then(Completions.complete(job, 40, Duration.ofMillis(50)))
                .doOnNext(o -> outcomes.get(o).incrementAndGet())
                .onErrorResume(e -> {
                    gaveUp.incrementAndGet();
                    gaveUpErrors.add(job.id() + "/" + job.runLease() + ": " + e);
                    return Mono.empty();
                })
                .then();
    }

    /** Completions that ended with the job closed by this drain (first try, retry, or in-doubt resolved). */
    long finished() {
        return outcomes.get(Outcome.ACCEPTED).get() + outcomes.get(Outcome.ACCEPTED_AFTER_RETRY).get()
                + outcomes.get(Outcome.CLOSED_BY_EARLIER_TRY).get();
    }

    /** Jobs handed to a handler more than once. */
    long redelivered() {
        return deliveries.values().stream().filter(n -> n.get() > 1).count();
    }

    int distinctDelivered() {
        return deliveries.size();
    }

    long outcome(Outcome o) {
        return outcomes.get(o).get();
    }

    long gaveUp() {
        return gaveUp.get();
    }

    /** Subscriptions that completed or failed; while the engines run this must stay 0. */
    int subscriptionsEnded() {
        return subscriptionsEnded.get();
    }

    List<Throwable> subscriptionErrors() {
        return List.copyOf(subscriptionErrors);
    }

    String summary() {
        return "delivered " + deliveries.size() + " distinct jobs (" + redelivered() + " more than once); outcomes "
                + outcomes + ", gave up " + gaveUp.get()
                + (gaveUpErrors.isEmpty() ? "" : " e.g. " + gaveUpErrors.stream().limit(3).toList())
                + "; subscriptions ended " + subscriptionsEnded.get()
                + (subscriptionErrors.isEmpty() ? "" : " " + subscriptionErrors.stream().limit(3).toList());
    }

    @Override
    public void close() {
        subscriptions.forEach(Disposable::dispose);
    }
}
