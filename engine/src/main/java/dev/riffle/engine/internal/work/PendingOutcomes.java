package dev.riffle.engine.internal.work;

import dev.riffle.engine.api.JobResult;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;

/**
 * The second stage of {@code Riffle.work(...)}: outcomes queued for durability, at most {@code max} of them between
 * being queued and their {@link JobResult} reaching the subscriber. A finished handler {@link #admit admits} its
 * outcome and keeps its slot only until a permit is free; each result is emitted when its outcome is durable (or could
 * not be recorded), and its permit returns when the subscriber has taken it, so a subscriber that stops requesting
 * stops the handlers too (backpressure, as a bounded {@code flatMap} would give).
 *
 * <p>Why not a second {@code flatMap(record, max)}: each inner completion makes {@code FluxFlatMap} scan its whole
 * inner array, and a completion batch completes hundreds of inners at once, so that scan was the largest single cost of
 * the event loop in the W = 64 drain profile (docs/benchmarks.md). Here a completion costs one counter update and one
 * emission.
 */
public final class PendingOutcomes<T, R> {
    // Emissions come from whichever event loop finished a flush; a concurrent one retries (briefly) instead of failing.
    private static final Sinks.EmitFailureHandler RETRY_CONCURRENT =
            (signal, result) -> result == Sinks.EmitResult.FAIL_NON_SERIALIZED;

    private final int max;
    private final Function<T, Mono<R>> record;
    private final Sinks.Many<R> results = Sinks.many().unicast().onBackpressureBuffer();
    private final AtomicInteger used = new AtomicInteger();
    private final Queue<Waiter<T>> waiters = new ConcurrentLinkedQueue<>();
    // Admitted outcomes not yet emitted, plus one while the handler stage runs: the results complete at zero.
    private final AtomicLong outstanding = new AtomicLong(1);

    // Runs between a failed acquire and the waiter's queueing: a test seam that puts a release in that window.
    private final Runnable queueWindow;

    private PendingOutcomes(int max, Function<T, Mono<R>> record, Runnable queueWindow) {
        this.max = max;
        this.record = record;
        this.queueWindow = queueWindow;
    }

    /**
     * Runs {@code handlers} (a stage that {@link #admit admits} every finished handler's outcome; given this stage
     * to build it) and returns the results: cold, one stage per subscription. The results complete when the handler
     * stage has completed and every admitted outcome has been emitted; they error when the handler stage errors;
     * cancelling them cancels the handler stage (outcomes already admitted still become durable).
     */
    public static <T, R> Flux<R> run(int max, Function<T, Mono<R>> record,
                                     Function<PendingOutcomes<T, R>, Flux<Void>> handlers) {
        return run(max, record, handlers, () -> { });
    }

    static <T, R> Flux<R> run(int max, Function<T, Mono<R>> record,
                              Function<PendingOutcomes<T, R>, Flux<Void>> handlers, Runnable queueWindow) {
        return Flux.defer(() -> {
            PendingOutcomes<T, R> stage = new PendingOutcomes<>(max, record, queueWindow);
            Disposable running = handlers.apply(stage).subscribe(null, stage::upstreamFailed, stage::oneDone);
            return stage.results.asFlux()
                    .doOnNext(r -> stage.release())
                    .doFinally(s -> running.dispose());
        });
    }

    /** Completes once {@code handled}'s outcome holds a permit and is queued for recording. */
    public Mono<Void> admit(T handled) {
        return Mono.create(sink -> {
            if (tryAcquire()) {
                start(handled);
                sink.success();
                return;
            }
            Waiter<T> w = new Waiter<>(handled, sink);
            sink.onCancel(w::cancel);
            queueWindow.run();
            waiters.add(w);
            // A permit released between the failed tryAcquire and the add would otherwise wake no one.
            grantWaiters();
        });
    }

    private boolean tryAcquire() {
        for (;;) {
            int u = used.get();
            if (u >= max) {
                return false;
            }
            if (used.compareAndSet(u, u + 1)) {
                return true;
            }
        }
    }

    private void release() {
        used.decrementAndGet();
        grantWaiters();
    }

    private void grantWaiters() {
        while (!waiters.isEmpty() && tryAcquire()) {
            Waiter<T> w = waiters.poll();
            if (w == null || !w.grant()) {
                // Taken by another granter, or cancelled while waiting: give the permit back and look again.
                used.decrementAndGet();
                continue;
            }
            start(w.handled);
            w.sink.success();
        }
    }

    private void start(T handled) {
        outstanding.incrementAndGet();
        record.apply(handled).subscribe(new CoreSubscriber<R>() {
            @Override
            public void onSubscribe(Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(R r) {
                // Fails quietly once the subscriber has cancelled: the outcome is durable, nobody waits for it.
                results.emitNext(r, RETRY_CONCURRENT);
            }

            @Override
            public void onError(Throwable t) {
                // record() never errors; should it, the permit must not leak.
                release();
                oneDone();
            }

            @Override
            public void onComplete() {
                oneDone();
            }
        });
    }

    private void oneDone() {
        if (outstanding.decrementAndGet() == 0) {
            results.emitComplete(RETRY_CONCURRENT);
        }
    }

    private void upstreamFailed(Throwable e) {
        results.emitError(e, RETRY_CONCURRENT);
    }

    private static final class Waiter<T> {
        final T handled;
        final MonoSink<Void> sink;
        private final AtomicBoolean state = new AtomicBoolean();

        Waiter(T handled, MonoSink<Void> sink) {
            this.handled = handled;
            this.sink = sink;
        }

        boolean grant() {
            return state.compareAndSet(false, true);
        }

        void cancel() {
            state.set(true);
        }
    }
}
