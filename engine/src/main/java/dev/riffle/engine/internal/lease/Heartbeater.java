package dev.riffle.engine.internal.lease;

import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.InFlight;
import dev.riffle.engine.internal.attempt.ProgressWriter;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Records heartbeat evidence for this process's long-running attempts (docs/design/delivery-contract.md, Rescue): every
 * interval, one statement for all attempts claimed longer ago than the interval. Short jobs never get an
 * {@code attempt_state} row. Stale rescue treats fresh evidence as alive.
 */
public final class Heartbeater implements ProgressWriter {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.lease");

    private final Db db;
    private final InFlight inFlight;
    private final Duration interval;
    private final Scheduler scheduler;
    // A chain of one-shot tasks instead of a periodic one: disposing a one-shot reactor task may take the timer
    // queue's lock (BlockHound allows it), disposing a periodic one may not, and close() can run on an event loop.
    private final Disposable.Swap timer = Disposables.swap();
    private final AtomicBoolean running = new AtomicBoolean();
    private final AtomicLong beats = new AtomicLong();
    private final AtomicLong failing = new AtomicLong();
    private volatile boolean closed;

    /** Starts beating every {@code interval}. */
    public Heartbeater(Db db, InFlight inFlight, Duration interval, Scheduler scheduler) {
        this.db = db;
        this.inFlight = inFlight;
        this.interval = interval;
        this.scheduler = scheduler;
        scheduleTick();
    }

    private void scheduleTick() {
        if (!closed) {
            timer.replace(scheduler.schedule(this::tick, interval.toNanos(), TimeUnit.NANOSECONDS));
        }
    }

    private void tick() {
        scheduleTick();
        if (!running.compareAndSet(false, true)) {
            return;
        }
        beatOnce().doFinally(s -> running.set(false))
                .subscribe(n -> {
                    long failed = failing.getAndSet(0);
                    if (failed > 0) {
                        log.info("heartbeats work again after {} failed intervals", failed);
                    }
                }, e -> {
                    // One line when heartbeats start failing and one when they work again, not one per interval.
                    if (failing.getAndIncrement() == 0) {
                        log.warn("heartbeat failed; retrying every interval: {}", e.toString());
                    }
                });
    }

    /** Records evidence for attempts older than the interval (or with progress to write); emits how many. */
    public Mono<Integer> beatOnce() {
        return beat(inFlight.heldLongerThan(interval));
    }

    /** Records evidence and buffered progress for these attempts in one statement; emits how many were recorded. */
    @Override
    public Mono<Integer> beat(List<ClaimedJob> jobs) {
        if (jobs.isEmpty()) {
            return Mono.just(0);
        }
        int n = jobs.size();
        String[] progress = new String[n];
        for (int i = 0; i < n; i++) {
            progress[i] = jobs.get(i).takeProgress();
        }
        Integer[] slots = new Integer[n];
        Long[] ids = new Long[n];
        Long[] leases = new Long[n];
        Long[] receipts = new Long[n];
        for (int i = 0; i < n; i++) {
            Receipt r = jobs.get(i).receipt();
            slots[i] = r.claimSlot();
            ids[i] = r.jobId();
            leases[i] = r.runLease();
            receipts[i] = r.receiptId();
        }
        return db.query("heartbeat", st -> st.bind("$1", slots).bind("$2", ids).bind("$3", leases).bind("$4", receipts)
                                .bind("$5", progress),
                        row -> 1)
                .count()
                .map(Long::intValue)
                .doOnNext(c -> beats.addAndGet(c))
                .doOnError(e -> {
                    for (int i = 0; i < n; i++) {
                        if (progress[i] != null) {
                            jobs.get(i).restoreProgress(progress[i]);
                        }
                    }
                });
    }

    /** Heartbeat rows written since start. */
    public long beats() {
        return beats.get();
    }

    /** Stops the timer. */
    public void close() {
        closed = true;
        timer.dispose();
    }
}
