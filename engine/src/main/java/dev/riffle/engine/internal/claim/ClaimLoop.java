package dev.riffle.engine.internal.claim;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.notify.WakeupListener;
import dev.riffle.engine.internal.time.EngineClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
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
 *
 * <p>A failed claim never ends the subscription: the loop backs off (exponential, capped, jittered) and keeps
 * claiming for as long as the subscription lives; poll ticks do not shorten the backoff, a listener reconnect
 * (the database answers again) ends it. Emission, release of jobs that can no longer be emitted, and completion
 * all run in one serialized drain loop, so a claimed job is either handed to the subscriber or released.
 */
public final class ClaimLoop {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.claim");
    private static final long MIN_ERROR_BACKOFF_MS = 100;
    private static final long MAX_ERROR_BACKOFF_MS = 3_000;

    /** Subscription settings. */
    public record Settings(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int maxBatch, Duration pollInterval,
                           Duration safetyPollInterval, Duration busyRetryDelay, Duration claimLinger) {}

    /** Releases of undelivered jobs in flight at once (each is one queued outcome; the batcher groups them). */
    static final int RELEASE_CONCURRENCY = 16;

    private final FluxSink<Job> sink;
    private final Claimer claimer;
    private final Settings settings;
    private final Scheduler scheduler;
    private final EngineClock clock;
    private final WakeupListener listener;
    private final Set<String> queueSet;
    private final AtomicInteger wip = new AtomicInteger();
    private final Disposable.Composite resources = Disposables.composite();
    // One pending retry timer at a time; replacing it disposes the old one, so nothing accumulates per claim.
    private final Disposable.Swap retryTimer = Disposables.swap();
    // The poll is a chain of one-shot tasks rather than a periodic one: disposing a one-shot reactor task is
    // allowed to take the timer queue's lock briefly (BlockHound knows it), disposing a periodic one is not, and the
    // subscription may be cancelled from an event-loop thread.
    private final Disposable.Swap pollTimer = Disposables.swap();
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
    // After a failed claim: no claim until the backoff timer fires or the listener reconnects.
    private volatile boolean backingOff;
    // A finished claim waiting for the drain loop to emit (or release) its jobs.
    private volatile Claimer.@Nullable Result result;
    private volatile boolean completeRequested;
    private boolean completed; // drain loop only
    private volatile long lastAttemptNanos;
    private int consecutiveErrors; // claim callbacks only; at most one claim is in flight
    private long failingSinceNanos;

    private ClaimLoop(FluxSink<Job> sink, Claimer claimer, Settings settings, Scheduler scheduler, EngineClock clock,
                      WakeupListener listener) {
        this.sink = sink;
        this.claimer = claimer;
        this.settings = settings;
        this.scheduler = scheduler;
        this.clock = clock;
        this.lastAttemptNanos = clock.nanos();
        this.listener = listener;
        this.queueSet = Set.of(settings.queues());
    }

    /**
     * A cold {@code Flux} of claimed jobs; each subscription runs its own loop and is registered in {@code live}
     * (removed again when it ends) so the engine can complete it on close.
     */
    public static Flux<Job> flux(Claimer claimer, Settings settings, Scheduler scheduler, EngineClock clock,
                                 WakeupListener listener, Set<ClaimLoop> live) {
        return Flux.<Job>create(sink -> {
            ClaimLoop loop = new ClaimLoop(sink, claimer, settings, scheduler, clock, listener);
            live.add(loop);
            sink.onDispose(() -> {
                live.remove(loop);
                loop.dispose();
            });
            loop.start();
            sink.onRequest(n -> loop.drain());
            loop.drain();
        }, FluxSink.OverflowStrategy.ERROR)
                // The drain loop checks before every emission; this catches a job the sink itself discards anyway.
                .doOnDiscard(ClaimedJob.class, job -> release(List.of(job)));
    }

    private void start() {
        resources.add(listener.wakeups()
                .filter(q -> WakeupListener.ALL.equals(q) || queueSet.contains(q))
                .subscribe(q -> {
                    if (WakeupListener.ALL.equals(q)) {
                        // The listener (re)connected: the database answers, so a claim backoff can end now.
                        backingOff = false;
                    }
                    wake();
                }));
        schedulePoll();
    }

    private void schedulePoll() {
        if (!disposed) {
            // replace(): the previous task is the one running now (or none); on a disposed swap the new one is
            // disposed at once.
            pollTimer.replace(scheduler.schedule(this::pollTick, settings.pollInterval().toNanos(), TimeUnit.NANOSECONDS));
        }
    }

    private void pollTick() {
        if (disposed) {
            return;
        }
        long idle = clock.nanos() - lastAttemptNanos;
        if (!listener.isListening() || idle >= settings.safetyPollInterval().toNanos()) {
            wake();
        }
        schedulePoll();
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

    private void backoffElapsed() {
        backingOff = false;
        wake();
    }

    void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            Claimer.Result r = result;
            if (r != null) {
                result = null;
                deliver(r);
            }
            if (completeRequested && !completed) {
                completed = true;
                sink.complete();
            }
            if (!disposed && !inFlight && maybeWork && !backingOff) {
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
                    // inFlight before the second look at disposed, disposed before dispose() looks at inFlight:
                    // either this claim is not started or dispose() knows one is in flight (quiesced waits for it).
                    inFlight = true;
                    if (disposed) {
                        inFlight = false;
                        idle.tryEmitEmpty();
                    } else {
                        urgent = false;
                        maybeWork = false;
                        lastAttemptNanos = clock.nanos();
                        int ask = (int) Math.min(demand, settings.maxBatch());
                        claimer.claim(settings.queues(), settings.deadlineSecs(), settings.materialize(), ask)
                                .subscribe(this::onResult, this::onError);
                    }
                }
            }
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    private void onResult(Claimer.Result r) {
        if (consecutiveErrors > 0) {
            log.info("claims for {} work again after {} failed attempts over {} ms", queueSet, consecutiveErrors,
                    (clock.nanos() - failingSinceNanos) / 1_000_000);
            consecutiveErrors = 0;
        }
        result = r;
        drain();
    }

    /**
     * Drain loop only. Hands each job to the subscriber while it is still there and wants it; every job that can no
     * longer be emitted (the subscriber cancelled, the engine is stopping, also between two jobs of one claim) is
     * released so it is ready again at once instead of waiting for rescue.
     */
    private void deliver(Claimer.Result r) {
        List<ClaimedJob> undelivered = null;
        for (ClaimedJob job : r.jobs()) {
            if (disposed || completeRequested || sink.isCancelled() || sink.requestedFromDownstream() == 0) {
                if (undelivered == null) {
                    undelivered = new ArrayList<>();
                }
                undelivered.add(job);
            } else {
                sink.next(job);
            }
        }
        if (undelivered != null) {
            release(undelivered);
        }
        if (!disposed) {
            switch (r.status()) {
                case CLAIMED -> {
                    maybeWork = true;
                    // A short claim means the lane is drained for now: take the next job as soon as it is wanted.
                    urgent = r.jobs().size() >= settings.maxBatch();
                }
                case BUSY -> later(jitter(settings.busyRetryDelay()));
                case EMPTY -> { /* wait for a NOTIFY or a poll tick */ }
            }
        }
        inFlight = false;
        if (disposed) {
            idle.tryEmitEmpty();
        }
    }

    private static void release(List<ClaimedJob> jobs) {
        Flux.fromIterable(jobs).flatMap(ClaimedJob::release, RELEASE_CONCURRENCY, 1)
                .subscribe(v -> {}, e -> log.warn("release of {} undelivered jobs failed; rescue will recover them: {}",
                        jobs.size(), e.toString()));
    }

    private void onError(Throwable e) {
        if (consecutiveErrors++ == 0) {
            failingSinceNanos = clock.nanos();
            // One line when claims start failing and one when they work again; the retries in between are silent.
            log.warn("claims for {} are failing, retrying with backoff (up to {} ms) until the database answers: {}",
                    queueSet, MAX_ERROR_BACKOFF_MS, e.toString());
        } else {
            log.debug("claim for {} failed again ({} in a row): {}", queueSet, consecutiveErrors, e.toString());
        }
        long cap = Math.min(MAX_ERROR_BACKOFF_MS, MIN_ERROR_BACKOFF_MS << Math.min(consecutiveErrors - 1, 10));
        // Jittered between half the step and the step, so subscriptions (and engines) do not retry in lockstep.
        long backoffMs = cap / 2 + ThreadLocalRandom.current().nextLong(cap / 2 + 1);
        backingOff = true;
        inFlight = false;
        if (disposed) {
            idle.tryEmitEmpty();
            return;
        }
        retryTimer.update(scheduler.schedule(this::backoffElapsed, backoffMs, TimeUnit.MILLISECONDS));
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
        completeRequested = true;
        // The drain loop completes the sink, so completion never overlaps an emission; jobs of a claim that
        // returns from now on are released.
        drain();
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
        disposed = true;
        if (!inFlight) {
            idle.tryEmitEmpty();
        }
        resources.dispose();
        pollTimer.dispose();
        retryTimer.dispose();
        lingerTimer.dispose();
    }
}
