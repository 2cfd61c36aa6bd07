package dev.riffle.engine.internal.claim;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.limits.QueueLimits;
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
 * most the room left (the outstanding demand plus the subscription's prefetch, less what is buffered and what running
 * claims asked for, capped by the batch limit), and nothing is claimed before the subscriber asks. With a prefetch of
 * zero (plain {@code subscribe(...)}) the number of claimed-but-undelivered jobs never exceeds the outstanding
 * demand; {@code work(...)} claims up to its prefetch ahead of running handlers, so the next claim overlaps the
 * handlers of the last one.
 *
 * <p>Claims in flight: one when there may be work; up to {@code claimConcurrency} while claims come back full. Each
 * runs on a different lane (a claim locks the head of the lane it reads, {@code FOR UPDATE SKIP LOCKED}, and moves
 * on to another lane when one is taken), so a queue spread over several enqueue shards is claimed in parallel.
 *
 * <p>Wake-ups: a NOTIFY for one of the subscribed queues, a (re)connect of the listener, a poll tick (short
 * interval while LISTEN is down, long safety interval while it is up), or a previous claim that returned jobs
 * (there may be more). A claim that found every lane busy retries after a short jittered delay.
 *
 * <p>A failed claim never ends the subscription: the loop backs off (exponential, capped, jittered) and keeps
 * claiming for as long as the subscription lives; poll ticks do not shorten the backoff, a listener reconnect
 * (the database answers again) ends it. Claim results, emission, release of jobs that can no longer be emitted, and
 * completion all run in one serialized drain loop, so a claimed job is either handed to the subscriber or released.
 *
 * <p>Queue limits (docs/limits.md): when one of the queues has a concurrency or rate limit, a claim asks each
 * limited queue for at most what this engine's share leaves ({@link QueueLimits#plan}) through the capped claim;
 * with no room, the loop waits for an attempt of the queue to end, a renewal, or the next token. Subscriptions whose
 * queues have no limits claim exactly as before. With weights, each claim goes to one queue, chosen by smooth
 * weighted round robin among the queues not known to be empty.
 */
public final class ClaimLoop {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.claim");
    private static final long MIN_ERROR_BACKOFF_MS = 100;
    private static final long MAX_ERROR_BACKOFF_MS = 3_000;

    /** Subscription settings. */
    public record Settings(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int maxBatch, Duration pollInterval,
                           Duration safetyPollInterval, Duration busyRetryDelay, Duration claimLinger,
                           int claimConcurrency, int prefetch, @Nullable QueueLimits limits,
                           int @Nullable [] weights) {
        /** Settings without limits or weights. */
        public Settings(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int maxBatch,
                        Duration pollInterval, Duration safetyPollInterval, Duration busyRetryDelay,
                        Duration claimLinger, int claimConcurrency, int prefetch) {
            this(queues, deadlineSecs, materialize, maxBatch, pollInterval, safetyPollInterval, busyRetryDelay,
                    claimLinger, claimConcurrency, prefetch, null, null);
        }
    }

    /**
     * What came back from one claim: its result or its error, how many jobs it asked for, its limits plan (null for
     * a plain claim) and, with weights, the index of the queue it claimed from (-1 otherwise).
     */
    private record Returned(int ask, Claimer.@Nullable Result result, @Nullable Throwable error,
                            QueueLimits.@Nullable Plan plan, int queueIndex) {}

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
    // Claims started and not yet processed by the drain loop; jobs they asked for. Drain loop only.
    private int claimsInFlight;
    private long reserved;
    // The last processed claim came back full: more work is likely, so further claims may run alongside.
    private boolean hot;
    // Claimed jobs waiting for demand (at most the prefetch beyond the subscriber's demand). Drain loop only.
    private final java.util.ArrayDeque<ClaimedJob> buffer = new java.util.ArrayDeque<>();
    private final java.util.concurrent.ConcurrentLinkedQueue<Returned> returned =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
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
    private volatile boolean completeRequested;
    private boolean completed; // drain loop only
    private volatile long lastAttemptNanos;
    private int consecutiveErrors; // drain loop only
    private long failingSinceNanos;
    // Queue limits: the last launch found no room (or the limits not known yet); a renewal or an ended attempt wakes.
    private volatile boolean limitBlocked;
    // Weights (drain loop only): smooth weighted round robin state and queues whose last claim found nothing.
    private final long @Nullable [] wrrCurrent;
    private final boolean @Nullable [] emptyQueue;
    private volatile boolean clearEmpty;

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
        this.wrrCurrent = settings.weights() == null ? null : new long[settings.queues().length];
        this.emptyQueue = settings.weights() == null ? null : new boolean[settings.queues().length];
    }

    /**
     * A cold {@code Flux} of claimed jobs; each subscription runs its own loop and is registered in {@code live}
     * so the engine can complete it on close. A loop leaves {@code live} once it has ended and no claim of it is in
     * flight: a subscriber that cancels just before the engine closes must not leave a claim whose jobs come back
     * after the completion batcher and the pool are gone (they would stay open until rescue instead of being released).
     */
    public static Flux<Job> flux(Claimer claimer, Settings settings, Scheduler scheduler, EngineClock clock,
                                 WakeupListener listener, Set<ClaimLoop> live) {
        return Flux.<Job>create(sink -> {
            ClaimLoop loop = new ClaimLoop(sink, claimer, settings, scheduler, clock, listener);
            live.add(loop);
            sink.onDispose(() -> {
                loop.dispose();
                loop.quiesced().subscribe(null, e -> live.remove(loop), () -> live.remove(loop));
            });
            loop.start();
            sink.onRequest(n -> loop.drain());
            loop.drain();
        }, FluxSink.OverflowStrategy.ERROR)
                // The drain loop checks before every emission; this catches a job the sink itself discards anyway.
                .doOnDiscard(ClaimedJob.class, job -> release(List.of(job)));
    }

    private void start() {
        QueueLimits limits = settings.limits();
        if (limits != null) {
            resources.add(limits.register(settings.queues(), this::limitWake));
        }
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
        clearEmpty = true;
        drain();
    }

    /** A renewal answered or an attempt of a limited queue ended: claim again if the limits held the loop back. */
    private void limitWake() {
        if (limitBlocked) {
            limitBlocked = false;
            maybeWork = true;
            urgent = true;
            drain();
        }
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
            Returned r;
            while ((r = returned.poll()) != null) {
                claimsInFlight--;
                reserved -= r.ask();
                QueueLimits.Plan plan = r.plan();
                QueueLimits limits = settings.limits();
                if (plan != null && limits != null) {
                    limits.settle(plan, r.result() == null ? List.of() : r.result().jobs());
                }
                if (r.queueIndex() >= 0 && r.result() != null && emptyQueue != null) {
                    emptyQueue[r.queueIndex()] = r.result().status() == Claimer.Status.EMPTY;
                }
                if (r.error() != null) {
                    failed(r.error());
                } else {
                    accept(r.ask(), java.util.Objects.requireNonNull(r.result()));
                }
            }
            emitBuffered();
            if (completeRequested && !completed) {
                completed = true;
                sink.complete();
            }
            launchClaims();
            if (disposed && claimsInFlight == 0) {
                idle.tryEmitEmpty();
            }
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }

    /**
     * Drain loop only. Starts claims while there is room: the first when there may be work, more alongside it
     * (up to the claim concurrency) only while claims come back full and the room left is a full batch. Each asks
     * for the room left, capped by the batch limit: the subscriber's outstanding demand plus the prefetch, less
     * what is buffered and what running claims asked for.
     */
    private void launchClaims() {
        while (!disposed && !backingOff && claimsInFlight < settings.claimConcurrency()
                && (claimsInFlight == 0 ? maybeWork : hot)) {
            long demand = sink.requestedFromDownstream();
            // Nothing is claimed for a subscriber that has not asked yet; the prefetch rides on top of real demand.
            if (demand == 0 && (settings.prefetch() == 0 || peakDemand == 0)) {
                return;
            }
            long room = demand + settings.prefetch() - buffer.size() - reserved;
            long window = Math.min(room, settings.maxBatch());
            if (window <= 0) {
                return;
            }
            // A claim alongside one in flight only for a full batch: a window that one claim can hold, split over two
            // claims, pays a claim's fixed cost (lane choice, cursor walk, the batch rows, a commit) twice for the
            // same jobs. On 2 cores, W = 64 with 1 ms handlers (window 128, one batch) ran 23,365-23,509 jobs/s
            // without this rule and 25,697-25,792 with it, claim server time 22 against 16 us per job
            // (docs/benchmarks.md, session 15). Parallel claims are for windows larger than a batch.
            if (claimsInFlight > 0 && window < settings.maxBatch()) {
                return;
            }
            if (window > peakDemand) {
                peakDemand = window;
            }
            // Demand comes back one job at a time as handlers finish. Claiming each trickle at once would make
            // claims of one or two jobs; instead wait a moment for half the window to free up, unless a
            // wake-up says work just arrived (latency first when the subscriber was idle).
            if (!urgent && window < (peakDemand + 1) / 2) {
                if (!lingering) {
                    lingering = true;
                    lingerTimer.update(scheduler.schedule(this::lingerElapsed,
                            settings.claimLinger().toNanos(), TimeUnit.NANOSECONDS));
                }
                return;
            }
            String[] queues = settings.queues();
            Integer[] deadlines = settings.deadlineSecs();
            Boolean[] materialize = settings.materialize();
            int queueIndex = -1;
            QueueLimits.Plan plan = null;
            QueueLimits limits = settings.limits();
            if (limits != null && !limits.known(queues)) {
                // Which queues are limited is not known before the first renewal covering them answers.
                limitBlocked = true;
                return;
            }
            int[] weights = settings.weights();
            if (weights != null) {
                boolean[] skip = new boolean[queues.length];
                long retry = 0;
                while (true) {
                    int i = pickWeighted(weights, skip);
                    if (i < 0) {
                        break;
                    }
                    String[] one = {queues[i]};
                    Integer[] oneDeadline = {deadlines[i]};
                    Boolean[] oneMaterialize = {materialize[i]};
                    QueueLimits.Plan p = limits == null ? null : limits.plan(one, oneDeadline, oneMaterialize, (int) window);
                    if (p != null && p.queues().length == 0) {
                        skip[i] = true;
                        retry = retry == 0 ? p.retryNanos() : p.retryNanos() == 0 ? retry : Math.min(retry, p.retryNanos());
                        continue;
                    }
                    queueIndex = i;
                    plan = p;
                    queues = one;
                    deadlines = oneDeadline;
                    materialize = oneMaterialize;
                    break;
                }
                if (queueIndex < 0) {
                    if (anyNotEmpty()) {
                        waitForRoom(retry);
                    } else {
                        maybeWork = false; // every queue came back empty: wait for a NOTIFY or a poll
                    }
                    return;
                }
            } else if (limits != null) {
                plan = limits.plan(queues, deadlines, materialize, (int) window);
                if (plan != null) {
                    if (plan.queues().length == 0) {
                        waitForRoom(plan.retryNanos());
                        return;
                    }
                    queues = plan.queues();
                    deadlines = plan.deadlines();
                    materialize = plan.materialize();
                }
            }
            // A dispose() racing this start runs the drain loop again after it, which then sees the claim counted
            // here and signals quiescence only once its result is back.
            claimsInFlight++;
            int ask = (int) window;
            reserved += ask;
            urgent = false;
            maybeWork = false;
            lastAttemptNanos = clock.nanos();
            QueueLimits.Plan claimPlan = plan;
            int claimIndex = queueIndex;
            claimer.claim(queues, deadlines, materialize, ask, plan == null ? null : plan.caps())
                    .subscribe(res -> {
                        returned.add(new Returned(ask, res, null, claimPlan, claimIndex));
                        drain();
                    }, e -> {
                        returned.add(new Returned(ask, null, e, claimPlan, claimIndex));
                        drain();
                    });
        }
    }

    /** Drain loop only: no room under the limits now; an ended attempt, a renewal or the next token wakes. */
    private void waitForRoom(long retryNanos) {
        limitBlocked = true;
        if (retryNanos > 0) {
            if (!disposed) {
                retryTimer.update(scheduler.schedule(this::limitWake, retryNanos, TimeUnit.NANOSECONDS));
            }
        }
    }

    /**
     * Drain loop only: the next queue of a weighted subscription (smooth weighted round robin: every eligible queue
     * gains its weight, the largest is chosen and pays the eligible total), or -1 when every queue is skipped or
     * came back empty.
     */
    private int pickWeighted(int[] weights, boolean[] skip) {
        long[] cur = java.util.Objects.requireNonNull(wrrCurrent);
        boolean[] empty = java.util.Objects.requireNonNull(emptyQueue);
        if (clearEmpty) {
            clearEmpty = false;
            java.util.Arrays.fill(empty, false);
        }
        long total = 0;
        int best = -1;
        for (int i = 0; i < weights.length; i++) {
            if (empty[i] || skip[i]) {
                continue;
            }
            cur[i] += weights[i];
            total += weights[i];
            if (best < 0 || cur[i] > cur[best]) {
                best = i;
            }
        }
        if (best >= 0) {
            cur[best] -= total;
        }
        return best;
    }

    private boolean anyNotEmpty() {
        boolean[] empty = java.util.Objects.requireNonNull(emptyQueue);
        for (boolean e : empty) {
            if (!e) {
                return true;
            }
        }
        return false;
    }

    /**
     * Drain loop only: hands buffered jobs to the subscriber while it wants them, looking again before every job
     * (a subscriber may cancel while it takes one, also between two jobs of one claim); what can no longer be
     * emitted is released.
     */
    private void emitBuffered() {
        while (!buffer.isEmpty() && !stopped() && sink.requestedFromDownstream() > 0) {
            sink.next(buffer.poll());
        }
        if (!buffer.isEmpty() && stopped()) {
            List<ClaimedJob> left = new ArrayList<>(buffer);
            buffer.clear();
            release(left);
        }
    }

    private boolean stopped() {
        return disposed || completeRequested || sink.isCancelled();
    }

    /**
     * Drain loop only. Queues the jobs of a claim for emission; every job that can no longer be emitted (the
     * subscriber cancelled, the engine is stopping) is released so it is ready again at once instead of waiting
     * for rescue.
     */
    private void accept(int ask, Claimer.Result r) {
        if (consecutiveErrors > 0) {
            log.info("claims for {} work again after {} failed attempts over {} ms", queueSet, consecutiveErrors,
                    (clock.nanos() - failingSinceNanos) / 1_000_000);
            consecutiveErrors = 0;
        }
        if (stopped()) {
            if (!r.jobs().isEmpty()) {
                release(r.jobs());
            }
            return;
        }
        buffer.addAll(r.jobs());
        switch (r.status()) {
            case CLAIMED -> {
                maybeWork = true;
                hot = r.jobs().size() >= ask;
                // A claim of a full batch says there is more: claim again at once rather than linger.
                urgent = r.jobs().size() >= settings.maxBatch();
            }
            case BUSY -> {
                hot = false;
                later(jitter(settings.busyRetryDelay()));
            }
            case EMPTY -> {
                hot = false; // wait for a NOTIFY or a poll tick
                if (emptyQueue != null && anyNotEmpty()) {
                    maybeWork = true; // a weighted subscription: the other queues may have work
                }
            }
        }
    }

    private static void release(List<ClaimedJob> jobs) {
        // All at once: a release is only queued for the batcher, which groups them, and every one is then queued before
        // the loop reports quiescence, so an engine closing waits for their flush (16 at a time left the rest to be
        // queued after the batcher may have closed).
        Flux.fromIterable(jobs).flatMap(ClaimedJob::release, Math.max(1, jobs.size()), 1)
                .subscribe(v -> {}, e -> log.warn("release of {} undelivered jobs failed; rescue will recover them: {}",
                        jobs.size(), e.toString()));
    }

    /** Drain loop only: a failed claim backs off; the subscription goes on. */
    private void failed(Throwable e) {
        hot = false;
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
        if (!disposed) {
            retryTimer.update(scheduler.schedule(this::backoffElapsed, backoffMs, TimeUnit.MILLISECONDS));
        }
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
        // The drain loop completes the sink, so completion never overlaps an emission; buffered jobs and jobs of a
        // claim that returns from now on are released, and it signals quiescence once no claim is in flight.
        drain();
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
        resources.dispose();
        pollTimer.dispose();
        retryTimer.dispose();
        lingerTimer.dispose();
        drain();
    }
}
