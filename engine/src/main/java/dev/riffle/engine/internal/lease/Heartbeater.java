package dev.riffle.engine.internal.lease;

import dev.riffle.engine.api.InvalidJobException;
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
import reactor.core.publisher.Flux;
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
                    // A refused checkpoint is not a failing heartbeat: the evidence was written and the checkpoint
                    // dropped, so the next interval has nothing left to fail on.
                    if (e instanceof InvalidJobException) {
                        log.warn("{}", e.getMessage());
                        return;
                    }
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

    /**
     * Records evidence and buffered progress for these attempts in one statement; emits how many were recorded. A
     * checkpoint that jsonb refuses (docs/adr/0008-json-judged-once.md) is dropped, never retried, and the attempts'
     * evidence is still recorded: for one attempt (an explicit flush) the call then fails with
     * {@link InvalidJobException} for {@code progress.metadata}; in a batch it is logged and the rest is written.
     */
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
        return write(jobs, progress).onErrorResume(e -> Db.isDataException(e) && carriesProgress(progress),
                e -> n == 1 ? dropped(jobs.get(0), e) : oneByOne(jobs, progress));
    }

    /** jsonb refused this attempt's checkpoint: drop it, still record the evidence, and report the refusal. */
    private Mono<Integer> dropped(ClaimedJob job, Throwable e) {
        InvalidJobException refusal = refusal(job, e);
        return write(List.of(job), new String[1]).then(Mono.<Integer>error(refusal));
    }

    /**
     * The batch carried a checkpoint jsonb refused, and the error does not say whose: write each attempt alone, so
     * only the refused checkpoint is dropped. Rare (one bad checkpoint costs one round of single writes), and the
     * next beat is one statement again.
     */
    private Mono<Integer> oneByOne(List<ClaimedJob> jobs, String[] progress) {
        return Flux.range(0, jobs.size())
                .concatMap(i -> {
                    ClaimedJob job = jobs.get(i);
                    String[] own = {progress[i]};
                    progress[i] = null; // handed over: write() restores it on failure, the final restore must not
                    return write(List.of(job), own).onErrorResume(e -> Db.isDataException(e) && own[0] != null,
                            e -> {
                                log.warn("{}", refusal(job, e).getMessage());
                                return write(List.of(job), new String[1]);
                            });
                })
                .reduce(0, Integer::sum)
                // Attempts not reached yet (a connection lost half way) get their checkpoint back for the next beat.
                .doOnError(e -> restore(jobs, progress));
    }

    private static boolean carriesProgress(String[] progress) {
        for (String p : progress) {
            if (p != null) {
                return true;
            }
        }
        return false;
    }

    private static InvalidJobException refusal(ClaimedJob job, Throwable e) {
        return new InvalidJobException("progress.metadata", "checkpoint of attempt (" + job.id() + ", "
                + job.runLease() + ") rejected by the database and dropped: " + e.getMessage(), e);
    }

    private static void restore(List<ClaimedJob> jobs, String[] progress) {
        for (int i = 0; i < jobs.size(); i++) {
            if (progress[i] != null) {
                jobs.get(i).restoreProgress(progress[i]);
            }
        }
    }

    /**
     * One heartbeat statement. On failure the checkpoints go back to their attempts for the next beat, unless the
     * database refused one (a data exception): sending it again would fail again, so the caller sorts it out.
     */
    private Mono<Integer> write(List<ClaimedJob> jobs, String[] progress) {
        int n = jobs.size();
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
                    if (!Db.isDataException(e)) {
                        restore(jobs, progress);
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
