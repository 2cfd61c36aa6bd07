package dev.riffle.engine.internal.claim;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.notify.WakeupListener;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.scheduler.Scheduler;

/**
 * The demand-driven claim loop behind one subscription. Downstream demand sizes every claim: a claim asks for at
 * most the outstanding demand (capped by the batch limit), there is at most one claim in flight per subscription,
 * and nothing is claimed while demand is zero. Jobs are emitted as soon as their claim commits, so the number of
 * claimed-but-undelivered jobs never exceeds the outstanding demand.
 *
 * <p>Wake-ups: a NOTIFY for one of the subscribed queues, a (re)connect of the listener, a poll tick (short
 * interval while LISTEN is down, long safety interval while it is up), or a previous claim that returned jobs
 * (there may be more). A claim that found every lane busy retries after a short jittered delay.
 */
public final class ClaimLoop {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.claim");
    private static final Duration MAX_ERROR_BACKOFF = Duration.ofSeconds(5);

    /** Subscription settings. */
    public record Settings(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int maxBatch, Duration pollInterval,
                           Duration safetyPollInterval, Duration busyRetryDelay, Duration claimLinger) {}

    private final FluxSink<Job> sink;
    private final Claimer claimer;
    private final Settings settings;
    private final Scheduler scheduler;
    private final WakeupListener listener;
    private final Set<String> queueSet;
    private final AtomicInteger wip = new AtomicInteger();
    private final Disposable.Composite resources = Disposables.composite();
    // One pending retry timer at a time; replacing it disposes the old one, so nothing accumulates per claim.
    private final Disposable.Swap retryTimer = Disposables.swap();
    private volatile boolean inFlight;
    private final reactor.core.publisher.Sinks.Empty<Void> idle = reactor.core.publisher.Sinks.empty();
    private volatile boolean maybeWork = true;
    // Set by a wake-up (NOTIFY, poll, linger timer): claim now even if only a little demand is outstanding.
    private volatile boolean urgent = true;
    // Largest demand seen, capped by the batch limit: the subscriber's window.
    private volatile long peakDemand;
    private final Disposable.Swap lingerTimer = Disposables.swap();
    private volatile boolean lingering;
    private volatile boolean disposed;
    private volatile long lastAttemptNanos = System.nanoTime();
    private int consecutiveErrors;

    private ClaimLoop(FluxSink<Job> sink, Claimer claimer, Settings settings, Scheduler scheduler, WakeupListener listener) {
        this.sink = sink;
        this.claimer = claimer;
        this.settings = settings;
        this.scheduler = scheduler;
        this.listener = listener;
        this.queueSet = Set.of(settings.queues());
    }

    /**
     * A cold {@code Flux} of claimed jobs; each subscription runs its own loop and is registered in {@code live}
     * (removed again when it ends) so the engine can complete it on close.
     */
    public static Flux<Job> flux(Claimer claimer, Settings settings, Scheduler scheduler, WakeupListener listener,
                                 Set<ClaimLoop> live) {
        return Flux.create(sink -> {
            ClaimLoop loop = new ClaimLoop(sink, claimer, settings, scheduler, listener);
            live.add(loop);
            sink.onDispose(() -> {
                live.remove(loop);
                loop.dispose();
            });
            loop.start();
            sink.onRequest(n -> loop.drain());
            loop.drain();
        }, FluxSink.OverflowStrategy.ERROR);
    }

    private void start() {
        resources.add(listener.wakeups()
                .filter(q -> WakeupListener.ALL.equals(q) || queueSet.contains(q))
                .subscribe(q -> wake()));
        long tick = settings.pollInterval().toNanos();
        resources.add(scheduler.schedulePeriodically(this::pollTick, tick, tick, TimeUnit.NANOSECONDS));
    }

    private void pollTick() {
        long idle = System.nanoTime() - lastAttemptNanos;
        if (!listener.isListening() || idle >= settings.safetyPollInterval().toNanos()) {
            wake();
        }
    }

    private void wake() {
        maybeWork = true;
        urgent = true;
        drain();
    }

    private void lingerElapsed() {
        lingering = false;
        urgent = true;
        drain();
    }

    void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            if (!disposed && !inFlight && maybeWork) {
                long demand = sink.requestedFromDownstream();
                long window = Math.min(demand, settings.maxBatch());
                if (window > peakDemand) {
                    peakDemand = window;
                }
                // Demand comes back one job at a time as handlers finish. Claiming each trickle at once would make
                // claims of one or two jobs; instead wait a moment for half the window to free up, unless a
                // wake-up says work just arrived (latency first when the subscriber was idle).
                if (demand > 0 && !urgent && window < (peakDemand + 1) / 2) {
                    if (!lingering) {
                        lingering = true;
                        lingerTimer.update(scheduler.schedule(this::lingerElapsed,
                                settings.claimLinger().toNanos(), TimeUnit.NANOSECONDS));
                    }
                } else if (demand > 0) {
                    inFlight = true;
                    urgent = false;
                    maybeWork = false;
                    lastAttemptNanos = System.nanoTime();
                    int ask = (int) Math.min(demand, settings.maxBatch());
                    claimer.claim(settings.queues(), settings.deadlineSecs(), settings.materialize(), ask)
                            .subscribe(this::onResult, this::onError);
                }
            }
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    private void onResult(Claimer.Result r) {
        consecutiveErrors = 0;
        if (disposed) {
            // The subscriber left (or the engine is stopping) while this claim was in flight: these jobs were never
            // handed to anyone, so give them back now instead of leaving them to rescue.
            Flux.fromIterable(r.jobs()).flatMap(ClaimedJob::release, 16, 1)
                    .subscribe(v -> {}, e -> log.warn("release of undelivered jobs failed; rescue will recover them: {}",
                            e.toString()));
            inFlight = false;
            idle.tryEmitEmpty();
            return;
        }
        for (ClaimedJob job : r.jobs()) {
            sink.next(job);
        }
        switch (r.status()) {
            case CLAIMED -> {
                maybeWork = true;
                // A short claim means the lane is drained for now: take the next job as soon as it is wanted.
                urgent = r.jobs().size() >= settings.maxBatch();
            }
            case BUSY -> later(jitter(settings.busyRetryDelay()));
            case EMPTY -> { /* wait for a NOTIFY or a poll tick */ }
        }
        inFlight = false;
        drain();
    }

    private void onError(Throwable e) {
        consecutiveErrors++;
        Duration backoff = Duration.ofMillis(Math.min(MAX_ERROR_BACKOFF.toMillis(), 50L << Math.min(consecutiveErrors, 7)));
        if (consecutiveErrors == 1 || consecutiveErrors % 20 == 0) {
            log.warn("claim from {} failed ({} in a row), retrying in {} ms: {}", queueSet, consecutiveErrors,
                    backoff.toMillis(), e.toString());
        }
        inFlight = false;
        if (disposed) {
            idle.tryEmitEmpty();
        }
        later(backoff);
    }

    private void later(Duration delay) {
        if (!disposed) {
            retryTimer.update(scheduler.schedule(this::wake, delay.toNanos(), TimeUnit.NANOSECONDS));
        }
    }

    private static Duration jitter(Duration base) {
        long nanos = base.toNanos();
        return Duration.ofNanos(nanos + ThreadLocalRandom.current().nextLong(nanos + 1));
    }

    /** Stops claiming and completes the subscriber's {@code Flux} (engine shutdown). */
    public void complete() {
        disposed = true;
        sink.complete();
        if (!inFlight) {
            idle.tryEmitEmpty();
        }
    }

    /**
     * Completes once this loop has stopped and no claim is in flight any more; jobs of a claim that returned after
     * the stop have been handed to release by then.
     */
    public reactor.core.publisher.Mono<Void> quiesced() {
        return idle.asMono();
    }

    private void dispose() {
        if (!inFlight) {
            idle.tryEmitEmpty();
        }
        disposed = true;
        resources.dispose();
        retryTimer.dispose();
        lingerTimer.dispose();
    }
}
