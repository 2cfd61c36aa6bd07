package dev.riffle.engine.test;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleAdmin;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Reactive test helpers over a running {@link Riffle}: enqueue, drain a queue with handlers until it is empty, and
 * await a job's state, all as cold {@code Mono}s for {@code StepVerifier} (or {@code .block()} on a test thread).
 * Built on the engine's public API only.
 *
 * <pre>{@code
 * @RiffleTest
 * class SignupTest {
 *     @Test
 *     void sendsTheMail(RiffleTestKit kit) {
 *         long id = kit.enqueue(NewJob.builder("mail").args("{\"to\":\"a@b.c\"}").build()).block();
 *         StepVerifier.create(kit.drain(Map.of("mail", job -> Mono.empty()), "default"))
 *                 .assertNext(results -> assertThat(results).extracting(JobResult::jobId).containsExactly(id))
 *                 .verifyComplete();
 *         StepVerifier.create(kit.awaitState(id, RiffleTestKit.JobState.COMPLETED)).expectNextCount(1).verifyComplete();
 *     }
 * }
 * }</pre>
 *
 * <h2>How job states are known</h2>
 * {@link #awaitState} reads the job with {@link RiffleAdmin#job(long)}, so it sees what any engine did to it:
 * <ul>
 *   <li>{@link JobState#COMPLETED}, {@link JobState#FAILED}, {@link JobState#CANCELLED}, {@link JobState#IN_DLQ}:
 *       exact, from the database, whoever ran or cancelled the job;</li>
 *   <li>{@link JobState#SCHEDULED}: the database has the job waiting for its {@code runAt} (enqueued for later,
 *       snoozed) or for its backoff (retryable);</li>
 *   <li>while the job is available or running, and once its terminal history has been pruned (history retention),
 *       the state is the last one this kit saw: from the {@link JobResult}s of attempts run through it
 *       ({@link #drain}, {@link #work}, {@link #runInBackground}), cancels made through {@link #cancel(long)}, and
 *       the DLQ listing.</li>
 * </ul>
 *
 * <p>Waits poll every {@value #POLL_MILLIS} ms on a scheduler of the kit's own (real time, never a virtual-time
 * scheduler) and fail with an {@link AssertionError} naming what was awaited when the timeout passes. Nothing here
 * blocks; the kit is thread-safe.
 */
public final class RiffleTestKit {

    /** Timeout of the overloads that take none: 30 s. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    /** Handlers {@link #drain} runs at once unless told: {@value}. */
    public static final int DEFAULT_CONCURRENCY = 8;
    /** How often waits look again, in milliseconds: {@value}. */
    public static final long POLL_MILLIS = 25;

    private static final Duration POLL = Duration.ofMillis(POLL_MILLIS);
    // Created once, when the kit is first used: a virtual-time scheduler installed later by StepVerifier.withVirtualTime
    // replaces the Schedulers factories, not this instance, so the kit's timeouts stay in real time.
    private static final Scheduler TIMER = Schedulers.newSingle("riffle-test-kit", true);

    static Scheduler timer() {
        return TIMER;
    }

    /** A job's state as the kit reports it (see the class comment for where each one comes from). */
    public enum JobState {
        /** An attempt completed successfully. */
        COMPLETED,
        /** Waiting to run again: retried with attempts left, snoozed, or enqueued with a future {@code runAt}. */
        SCHEDULED,
        /** Failed terminally (a {@code Fail} outcome, or a retry with no attempt left) and not in the DLQ. */
        FAILED,
        /** Parked in the dead-letter queue. */
        IN_DLQ,
        /** Cancelled: by its handler's {@code Cancel} outcome or through {@link #cancel(long)}. */
        CANCELLED
    }

    private final Riffle riffle;
    private final Map<Long, JobResult> lastResult = new ConcurrentHashMap<>();
    private final Map<Long, JobState> lastKnown = new ConcurrentHashMap<>();
    private final Map<Long, String> queueOf = new ConcurrentHashMap<>();
    /** Attempts (job id, run lease) delivered as their job's last one (a retry outcome then ends the job). */
    private final Set<Attempt> lastAttempts = ConcurrentHashMap.newKeySet();
    private final List<JobResult> journal = new CopyOnWriteArrayList<>();
    private final Disposable.Composite background = Disposables.composite();
    /**
     * Between {@code work(...)} and the drain's bookkeeping; identity except in DrainCompletenessIT, which delays
     * results to widen the window between an outcome's commit (visible in the counts) and its result's arrival.
     */
    private final UnaryOperator<Flux<JobResult>> resultTap;

    private RiffleTestKit(Riffle riffle, UnaryOperator<Flux<JobResult>> resultTap) {
        this.riffle = riffle;
        this.resultTap = resultTap;
    }

    /** A kit over an engine the caller started and closes. */
    public static RiffleTestKit of(Riffle riffle) {
        return new RiffleTestKit(Objects.requireNonNull(riffle, "riffle"), UnaryOperator.identity());
    }

    /** A kit whose drains see results through {@code resultTap}: a seam for the kit's own race test. */
    static RiffleTestKit withResultTap(Riffle riffle, UnaryOperator<Flux<JobResult>> resultTap) {
        return new RiffleTestKit(riffle, resultTap);
    }

    /**
     * The configuration builder the injected engine starts from: {@code db}'s URL and schema, {@code migrate(false)}
     * (the schema is migrated already), {@code poolSize(4)}, {@code applicationName("riffle-test")}, and maintenance
     * on with a leader retry of 200 ms and a promotion interval of 50 ms, so scheduled jobs and retries become
     * ready promptly. Everything else is the engine's default.
     */
    public static RiffleConfig.Builder testDefaults(TestDatabase db) {
        Objects.requireNonNull(db, "db");
        return RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(4)
                .applicationName("riffle-test")
                .maintenance(MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200))
                        .promotionInterval(Duration.ofMillis(50)).build());
    }

    /**
     * Starts an engine on {@code db} with {@link #testDefaults} adjusted by {@code configure}, and waits until its
     * LISTEN connection is up (so a wake-up sent right after is not missed). Blocks: call it on a test thread. The
     * caller closes the engine.
     *
     * @throws AssertionError when the engine does not start or listen within {@link #DEFAULT_TIMEOUT}
     */
    public static Riffle startEngine(TestDatabase db, Consumer<RiffleConfig.Builder> configure) {
        RiffleConfig.Builder builder = testDefaults(db);
        Objects.requireNonNull(configure, "configure").accept(builder);
        return startEngine(builder.build());
    }

    static Riffle startEngine(RiffleConfig config) {
        Riffle riffle = Riffle.start(config).block(DEFAULT_TIMEOUT);
        if (riffle == null) {
            throw new AssertionError("Riffle.start completed empty");
        }
        if (!Await.within(DEFAULT_TIMEOUT, () -> riffle.stats().listening())) {
            riffle.close().block(DEFAULT_TIMEOUT);
            throw new AssertionError("the engine's LISTEN connection was not up within " + DEFAULT_TIMEOUT);
        }
        return riffle;
    }

    /**
     * A started engine on {@code db} in manual mode: the maintenance leader and its loops are off, and the engine's
     * local clock is a {@link TestClock}; maintenance runs only when the test calls {@link ManualRiffle}'s
     * {@code ...Now()} methods. Blocks; close the result (try-with-resources).
     */
    public static ManualRiffle manual(TestDatabase db) {
        return manual(db, b -> {});
    }

    /** {@link #manual(TestDatabase)} with the configuration adjusted by {@code configure} (before the manual settings). */
    public static ManualRiffle manual(TestDatabase db, Consumer<RiffleConfig.Builder> configure) {
        return ManualRiffle.start(db, configure);
    }

    /** The engine. */
    public Riffle riffle() {
        return riffle;
    }

    /** Enqueues {@code job} (autocommit) and remembers its queue (and its future {@code runAt}); emits its id. */
    public Mono<Long> enqueue(NewJob job) {
        Objects.requireNonNull(job, "job");
        return riffle.client().enqueue(job).doOnNext(id -> remember(id, job));
    }

    /** Enqueues a batch in one statement; emits the ids in input order. */
    public Mono<List<Long>> enqueueMany(List<NewJob> jobs) {
        Objects.requireNonNull(jobs, "jobs");
        List<NewJob> copy = List.copyOf(jobs);
        return riffle.client().enqueueMany(copy).doOnNext(ids -> {
            for (int i = 0; i < ids.size(); i++) {
                remember(ids.get(i), copy.get(i));
            }
        });
    }

    private void remember(long id, NewJob job) {
        queueOf.put(id, job.queue());
        if (job.runAt() != null) {
            // Whether it is due is the database's call; a past runAt is overwritten by the first attempt seen.
            lastKnown.putIfAbsent(id, JobState.SCHEDULED);
        }
    }

    /**
     * Runs {@code handlers} over {@code queues} until they are empty; emits the results of the attempts this drain
     * ran, in completion order. Empty means: no ready job and no open attempt in any of the queues (counts from
     * {@link Riffle#counts}), and every attempt a handler started has its result. Jobs scheduled for later (future
     * {@code runAt}, retry and snooze delays) do not keep a drain going; promote them and drain again. With
     * {@link #DEFAULT_CONCURRENCY} handlers at once and a {@link #DEFAULT_TIMEOUT}.
     *
     * @throws IllegalArgumentException (as the error signal) for no queue, or invalid handlers as {@link Riffle#work}
     */
    public Mono<List<JobResult>> drain(Map<String, JobHandler> handlers, String... queues) {
        return drain(handlers, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT, queues);
    }

    /**
     * {@link #drain(Map, String...)} with explicit concurrency and timeout; errors with an {@link AssertionError}
     * (listing the queues' counts) when the queues are not empty within {@code timeout}.
     */
    public Mono<List<JobResult>> drain(Map<String, JobHandler> handlers, int concurrency, Duration timeout,
                                       String... queues) {
        Objects.requireNonNull(handlers, "handlers");
        requireTimeout(timeout);
        return Mono.defer(() -> {
            String[] qs = requireQueues(queues);
            AtomicLong started = new AtomicLong();
            AtomicLong finished = new AtomicLong();
            List<JobResult> results = new CopyOnWriteArrayList<>();
            Map<String, JobHandler> counted = recording(handlers, started);
            Mono<Boolean> idleOnce = Mono.defer(() -> {
                long before = started.get();
                return allIdle(qs).map(idle -> idle && before == started.get() && before == finished.get());
            });
            Mono<Boolean> idle = untilPresent(idleOnce.filter(b -> b));
            return riffle.work(counted, concurrency, qs)
                    .transform(resultTap)
                    .doOnNext(r -> {
                        record(r);
                        results.add(r);
                        if (handlers.containsKey(r.kind())) {
                            finished.incrementAndGet();
                        }
                    })
                    .takeUntilOther(idle)
                    .then(Mono.fromSupplier(() -> List.copyOf(results)))
                    .timeout(timeout, TIMER).onErrorResume(java.util.concurrent.TimeoutException.class, te -> Mono.defer(() -> countsOf(qs).flatMap(counts -> Mono.error(
                            new AssertionError("queues " + List.of(qs) + " not drained within " + timeout + " ("
                                    + started.get() + " attempts started, " + finished.get() + " finished): "
                                    + counts)))));
        });
    }

    /**
     * {@link Riffle#work} whose results (and delivered attempts) this kit records, for {@link #awaitState}. Cold;
     * cancel it to stop.
     */
    public Flux<JobResult> work(Map<String, JobHandler> handlers, int concurrency, String... queues) {
        Objects.requireNonNull(handlers, "handlers");
        return Flux.defer(() -> riffle.work(recording(handlers, new AtomicLong()), concurrency, requireQueues(queues))
                .doOnNext(this::record));
    }

    /**
     * Subscribes to {@link #work} in the background, with {@link #DEFAULT_CONCURRENCY}; the returned handle stops it,
     * and so does {@link #stopBackground()} (which the injected engine's teardown calls before closing it).
     */
    public Disposable runInBackground(Map<String, JobHandler> handlers, String... queues) {
        Disposable d = work(handlers, DEFAULT_CONCURRENCY, queues).subscribe();
        background.add(d);
        return d;
    }

    /** Stops every {@link #runInBackground} subscription. */
    public void stopBackground() {
        background.dispose();
    }

    /** Cancels a job through {@link RiffleAdmin#cancel(long)} and remembers a successful cancel for {@link #awaitState}. */
    public Mono<CancelResult> cancel(long jobId) {
        return riffle.admin().cancel(jobId).doOnNext(r -> {
            if (r != CancelResult.NOT_FOUND) {
                lastKnown.put(jobId, JobState.CANCELLED);
            }
        });
    }

    /** Every result this kit has recorded, in the order they arrived. */
    public List<JobResult> results() {
        return Collections.unmodifiableList(new ArrayList<>(journal));
    }

    /** The state of {@code jobId} as far as the kit knows now (see the class comment); empty when it knows nothing. */
    public Mono<Optional<JobState>> state(long jobId) {
        return riffle.admin().job(jobId)
                .map(info -> Optional.ofNullable(fromEngine(info.state())))
                .filter(Optional::isPresent)
                .switchIfEmpty(Mono.defer(() -> lastKnownState(jobId)));
    }

    // The kit's coarser vocabulary for what the database says; null while the job is available or running, where
    // the kit's last known state stands.
    private static @org.jspecify.annotations.Nullable JobState fromEngine(dev.riffle.engine.api.JobState state) {
        return switch (state) {
            case COMPLETED -> JobState.COMPLETED;
            case FAILED -> JobState.FAILED;
            case CANCELLED -> JobState.CANCELLED;
            case DLQ -> JobState.IN_DLQ;
            case SCHEDULED, RETRYABLE -> JobState.SCHEDULED;
            case AVAILABLE, RUNNING, WAITING_EXTERNAL -> null;
        };
    }

    private Mono<Optional<JobState>> lastKnownState(long jobId) {
        return Mono.defer(() -> {
            JobState known = lastKnown.get(jobId);
            String queue = queueOf.get(jobId);
            Mono<Boolean> dlq = queue == null ? Mono.just(false) : inDlq(queue, jobId).map(Optional::isPresent);
            return dlq.map(inDlq -> {
                return inDlq ? Optional.of(JobState.IN_DLQ) : Optional.ofNullable(known);
            });
        });
    }

    /** {@link #awaitState(long, JobState, Duration)} with {@link #DEFAULT_TIMEOUT}. */
    public Mono<JobState> awaitState(long jobId, JobState state) {
        return awaitState(jobId, state, DEFAULT_TIMEOUT);
    }

    /**
     * Emits {@code state} once {@link #state(long)} reports it; errors with an {@link AssertionError} naming the last
     * known state when {@code timeout} passes first. {@link JobState#IN_DLQ} needs the job's queue: the kit knows it
     * when it enqueued or delivered the job, otherwise use {@link #awaitInDlq(String, long, Duration)}.
     */
    public Mono<JobState> awaitState(long jobId, JobState state, Duration timeout) {
        Objects.requireNonNull(state, "state");
        requireTimeout(timeout);
        return poll(state(jobId).filter(s -> s.isPresent() && s.get() == state).map(Optional::get), timeout,
                () -> state(jobId).map(s -> "job " + jobId + " to be " + state + " (last known: "
                        + s.map(Enum::name).orElse("nothing") + ")"));
    }

    /**
     * Emits the result of the first recorded attempt of {@code jobId} that matches {@code condition}, or the earliest
     * one already recorded; errors with an {@link AssertionError} when none arrives within {@code timeout}.
     */
    public Mono<JobResult> awaitResult(long jobId, Predicate<JobResult> condition, Duration timeout) {
        Objects.requireNonNull(condition, "condition");
        requireTimeout(timeout);
        return poll(Mono.fromSupplier(() -> journal.stream().filter(r -> r.jobId() == jobId && condition.test(r))
                        .findFirst().orElse(null)), timeout,
                () -> Mono.just("a matching result of job " + jobId + " (last: " + lastResult.get(jobId) + ")"));
    }

    /** Emits the job's DLQ entry once it is there (exact: read with {@link RiffleAdmin#listDlq}). */
    public Mono<DlqEntry> awaitInDlq(String queue, long jobId, Duration timeout) {
        Objects.requireNonNull(queue, "queue");
        requireTimeout(timeout);
        return poll(inDlq(queue, jobId).flatMap(Mono::justOrEmpty), timeout,
                () -> Mono.just("job " + jobId + " in the DLQ of queue " + queue));
    }

    /** The DLQ entry of {@code jobId} in {@code queue}, if there is one. */
    public Mono<Optional<DlqEntry>> inDlq(String queue, long jobId) {
        // Entries are listed by job id after the given one: the page after jobId - 1 starts at jobId if it is there.
        return riffle.admin().listDlq(queue, jobId - 1, 1).filter(e -> e.jobId() == jobId).next()
                .map(Optional::of).defaultIfEmpty(Optional.empty());
    }

    /** Counts of each queue, in the given order. */
    public Mono<Map<String, QueueCounts>> countsOf(String... queues) {
        String[] qs = requireQueues(queues);
        return Flux.fromArray(qs).concatMap(riffle::counts)
                .collect(LinkedHashMap<String, QueueCounts>::new, (m, c) -> m.put(c.queue(), c))
                .map(Collections::unmodifiableMap);
    }

    private Mono<Boolean> allIdle(String[] queues) {
        return Flux.fromArray(queues).concatMap(riffle::counts).all(c -> c.available() == 0 && c.inFlight() == 0);
    }

    private Map<String, JobHandler> recording(Map<String, JobHandler> handlers, AtomicLong started) {
        Map<String, JobHandler> wrapped = new LinkedHashMap<>();
        handlers.forEach((kind, handler) -> {
            Objects.requireNonNull(handler, "handler for " + kind);
            wrapped.put(kind, job -> {
                delivered(job);
                started.incrementAndGet();
                return handler.handle(job);
            });
        });
        return wrapped;
    }

    private void delivered(Job job) {
        queueOf.put(job.id(), job.queue());
        if (job.attempt() >= job.maxAttempts()) {
            lastAttempts.add(new Attempt(job.id(), job.runLease()));
        }
    }

    private void record(JobResult r) {
        journal.add(r);
        lastResult.put(r.jobId(), r);
        if (!r.accepted()) {
            return;
        }
        boolean last = lastAttempts.remove(new Attempt(r.jobId(), r.runLease()));
        JobOutcome o = r.outcome();
        JobState s;
        if (o instanceof JobOutcome.Complete) {
            s = JobState.COMPLETED;
        } else if (o instanceof JobOutcome.Cancel) {
            s = JobState.CANCELLED;
        } else if (o instanceof JobOutcome.Snooze) {
            s = JobState.SCHEDULED;
        } else if (o instanceof JobOutcome.Retry && !last) {
            s = JobState.SCHEDULED;
        } else {
            // Fail, or a retry with no attempt left: terminal. Whether it went to the DLQ is read from the DLQ itself
            // (state(...)), since the policy that applied is the one recorded in the schema.
            s = JobState.FAILED;
        }
        lastKnown.put(r.jobId(), s);
    }

    /** A run lease is only unique within its job. */
    private record Attempt(long jobId, long runLease) {}

    private static <T> Mono<T> poll(Mono<T> probe, Duration timeout, java.util.function.Supplier<Mono<String>> what) {
        return untilPresent(probe)
                .timeout(timeout, TIMER).onErrorResume(java.util.concurrent.TimeoutException.class, te -> Mono.defer(() -> what.get().flatMap(w ->
                        Mono.error(new AssertionError("timed out after " + timeout + " waiting for " + w)))));
    }

    /** Subscribes to {@code probe} until it emits, {@value #POLL_MILLIS} ms apart (one probe at a time). */
    private static <T> Mono<T> untilPresent(Mono<T> probe) {
        return probe.repeatWhenEmpty(ticks -> ticks.delayElements(POLL, TIMER));
    }

    private static String[] requireQueues(@Nullable String... queues) {
        if (queues == null || queues.length == 0) {
            throw new IllegalArgumentException("at least one queue is required");
        }
        for (String q : queues) {
            NewJob.checkName("queue", q);
        }
        return queues.clone();
    }

    private static void requireTimeout(@Nullable Duration timeout) {
        if (timeout == null || timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be a positive duration, got " + timeout);
        }
    }
}
