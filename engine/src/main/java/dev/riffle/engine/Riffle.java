package dev.riffle.engine;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.JobClient;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.api.RiffleShutdownException;
import dev.riffle.engine.api.SchemaNotReadyException;
import dev.riffle.engine.internal.attempt.AttemptServices;
import dev.riffle.engine.internal.attempt.InFlight;
import dev.riffle.engine.internal.claim.ClaimLoop;
import dev.riffle.engine.internal.claim.Claimer;
import dev.riffle.engine.internal.claim.CursorAdvancer;
import dev.riffle.engine.internal.close.CompletionBatcher;
import dev.riffle.engine.internal.cron.CronSchedules;
import dev.riffle.engine.internal.enqueue.Enqueuer;
import dev.riffle.engine.internal.lease.Callbacks;
import dev.riffle.engine.internal.lease.Heartbeater;
import dev.riffle.engine.internal.migrate.Migrator;
import dev.riffle.engine.internal.metrics.QueueGauges;
import dev.riffle.engine.internal.metrics.RiffleMetrics;
import dev.riffle.engine.internal.notify.NotifyChannels;
import dev.riffle.engine.internal.notify.WakeupListener;
import dev.riffle.engine.internal.sql.Connections;
import dev.riffle.engine.internal.sql.SessionWarmup;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.internal.sql.SqlCatalog;
import dev.riffle.engine.internal.sql.StartupChecks;
import dev.riffle.engine.internal.tracing.JobTracing;
import dev.riffle.engine.internal.work.HandlerRunner;
import dev.riffle.engine.internal.work.PendingOutcomes;
import dev.riffle.engine.internal.time.EngineClock;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The Riffle engine: enqueue through {@link #client()}, receive jobs through {@link #subscribe(String...)}, read
 * {@link #counts(String)}. Start it with {@link #start(RiffleConfig)}; close it with {@link #close()}.
 *
 * <p>Threading: nothing here blocks. Jobs are emitted on the database driver's event-loop threads, so handlers
 * must not block either (use {@code publishOn(Schedulers.boundedElastic())} for blocking work).
 */
public final class Riffle implements Disposable {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine");
    /** How long {@link #close()} waits for subscriptions to stop claiming and give back undelivered jobs. */
    static final Duration CLOSE_QUIESCE_WAIT = Duration.ofSeconds(10);
    /** How long {@link #close()} waits, in all, for buffered outcomes to be flushed before giving up on them. */
    static final Duration CLOSE_FLUSH_WAIT = Duration.ofSeconds(30);
    /** How often a graceful shutdown looks whether every running attempt has finished. */
    static final Duration SHUTDOWN_DRAIN_POLL = Duration.ofMillis(20);
    /** Largest handler concurrency {@link #work} accepts: {@value}. */
    public static final int MAX_WORK_CONCURRENCY = 10_000;

    private final RiffleConfig config;
    /** The pool the engine created (from the URL, or around a non-pooled application factory); null for the app's. */
    private final @Nullable ConnectionPool ownedPool;
    private final Db db;
    private final Enqueuer enqueuer;
    private final Claimer claimer;
    private final CursorAdvancer advancer;
    private final CompletionBatcher completer;
    private final WakeupListener listener;
    private final Scheduler scheduler;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Set<ClaimLoop> liveSubscriptions = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final RiffleMetrics metrics;
    private final QueueGauges queueGauges;
    private final InFlight inFlight;
    private final dev.riffle.engine.internal.limits.QueueLimits limits;
    private final EngineClock clock;
    private final Maintenance maintenance;
    private final RiffleAdmin admin;
    private final Disposable cancelSignals;
    private final Heartbeater heartbeater;
    private final Callbacks callbacks;
    private final HandlerRunner.OutcomeFailures outcomeFailures = new HandlerRunner.OutcomeFailures();

    private Riffle(RiffleConfig config, ConnectionFactory pool, @Nullable ConnectionPool ownedPool,
                   Mono<PostgresqlConnection> direct, SqlCatalog sql) {
        this.config = config;
        this.ownedPool = ownedPool;
        this.db = new Db(pool, sql);
        this.scheduler = config.scheduler();
        this.clock = EngineClock.of(config.clock());
        // First, so every mechanism records into it; the stats meters read lazily, at scrape time.
        this.metrics = RiffleMetrics.bind(config.meterRegistry(), config.schema(), config.clock(), this::stats,
                EngineMeters.ALL);
        JobTracing tracing = JobTracing.of(config.observationRegistry(), config.schema());
        this.inFlight = new InFlight(clock);
        this.limits = new dev.riffle.engine.internal.limits.QueueLimits(db, inFlight, scheduler, clock);
        this.enqueuer = new Enqueuer(db, config.maxArgsBytes(), config.argsCodec(), config.copyEnqueueThreshold(),
                tracing);
        this.completer = new CompletionBatcher(db, inFlight, config.completionBatchSize(), config.completionWindow(),
                config.completionFlushConcurrency(), scheduler, clock, config.dlqByDefault(), metrics, tracing);
        this.advancer = new CursorAdvancer(db, config.cursorAdvanceDelay(), scheduler);
        this.listener = new WakeupListener(direct, NotifyChannels.of(config.schema()), clock, scheduler, metrics);
        this.heartbeater = new Heartbeater(db, inFlight, config.maintenance().heartbeatInterval(), scheduler);
        this.callbacks = new Callbacks(db, listener.callbacks(), config.safetyPollInterval(), scheduler,
                config.maxArgsBytes());
        // Everything a delivered attempt calls back into exists before the first claim can hand one out.
        this.claimer = new Claimer(db, advancer, new AttemptServices(completer, heartbeater, callbacks,
                retryDelays(config), config.argsCodec(), metrics, tracing), inFlight,
                clock);
        this.cancelSignals = listener.cancels().subscribe(inFlight::signal);
        this.maintenance = new Maintenance(config.maintenance(), db, direct, config.schema(), config.dlqByDefault(),
                scheduler, config.clock(), metrics);
        this.admin = new RiffleAdmin(db, config.applicationName(), maintenance.cron(), config.maintenance());
        this.queueGauges = new QueueGauges(db, metrics, config.schema(), config.meterRefreshInterval(), scheduler);
    }

    /** The engine-side backoff functions of the configured queues (QueueConfig.backoffFunction). */
    private static dev.riffle.engine.internal.attempt.RetryDelays retryDelays(RiffleConfig config) {
        Map<String, dev.riffle.engine.api.BackoffFunction> fns = new java.util.HashMap<>();
        config.queues().forEach((name, q) -> {
            if (q.backoffFunction() != null) {
                fns.put(name, q.backoffFunction());
            }
        });
        return new dev.riffle.engine.internal.attempt.RetryDelays(fns);
    }

    /**
     * Connects, migrates the schema when {@link RiffleConfig#migrate()} is set (Flyway on
     * {@code boundedElastic}, the one blocking step), then checks that the schema implements the function contract
     * this engine supports ({@code contract_version()}), and starts the wake-up listener. Cold.
     *
     * <p>Connections: from {@link RiffleConfig#url()} the engine opens its own pool and sessions; with
     * {@link RiffleConfig#connectionFactory()} it uses the application's factory (wrapped in a pool of its own when
     * it is not a {@code ConnectionPool}) and opens its LISTEN and leader sessions from
     * {@link RiffleConfig#listenConnectionFactory()} or the factory unwrapped. A failed start disposes only what
     * it created.
     *
     * @throws SchemaNotReadyException (as the error signal) when the schema is not migrated (migration off), or its
     *     function contract version ({@code contract_version()}, docs/adr/0007) is not the one this engine supports
     * @throws IllegalStateException (as the error signal) when migration is on and {@code dev.riffle:riffle-migrations}
     *     (Flyway, pgJDBC) is not on the classpath; the message names the dependency
     */
    public static Mono<Riffle> start(RiffleConfig config) {
        Objects.requireNonNull(config, "config");
        return Mono.defer(() -> {
            DatabaseUrl url = config.url();
            DatabaseUrl migrationUrl = config.migrationUrl() != null ? config.migrationUrl() : url;
            Mono<Void> migrate = config.migrate() && migrationUrl != null
                    ? Migrator.migrate(migrationUrl.jdbcUrl(), migrationUrl.user(),
                            migrationUrl.password() == null ? "" : migrationUrl.password(), config.schema())
                    : Mono.empty();
            SqlCatalog sql = SqlCatalog.load(config.schema());
            // Connections of a pool the engine creates are warmed as they open (SessionWarmup); an application's
            // ConnectionPool is the application's to size and warm.
            String warmSql = config.warmPool() ? sql.get("warm_session") : null;
            ConnectionFactory pool;
            ConnectionPool owned;
            Mono<PostgresqlConnection> direct;
            ConnectionFactory app = config.connectionFactory();
            if (url != null) {
                Connections.Endpoint endpoint = new Connections.Endpoint(url.host(), url.port(), url.database(),
                        url.user(), url.password(), url.options(), config.applicationName());
                owned = Connections.pool(endpoint, config.schema(), config.poolSize(), warmSql);
                pool = owned;
                direct = Connections.sessions(endpoint);
            } else {
                // RiffleConfig guarantees exactly one of url and connectionFactory.
                ConnectionFactory factory = Objects.requireNonNull(app, "connectionFactory");
                owned = Connections.isPooled(factory) ? null
                        : Connections.pool(factory, config.schema(), config.poolSize(), config.applicationName(),
                                warmSql);
                pool = owned != null ? owned : factory;
                ConnectionFactory listen = config.listenConnectionFactory() != null
                        ? config.listenConnectionFactory() : Connections.unwrapped(factory);
                direct = Connections.sessions(listen, config.applicationName());
            }
            Mono<Void> disposeOwned = owned == null ? Mono.empty() : owned.disposeLater();
            Db startDb = new Db(pool, sql);
            return migrate
                    .then(StartupChecks.run(startDb, config.schema(), config.queues().values()))
                    // Code schedules are stored before the engine exists, so the first leader tick sees them.
                    .then(new CronSchedules(startDb, config.clock()).upsertAll(config.schedules()))
                    // After the checks, so the functions the warm-up calls exist: open the whole pool now and warm
                    // it, rather than have the first load open and plan every connection at once.
                    .then(owned != null && warmSql != null
                            ? SessionWarmup.fill(owned, config.poolSize(), SessionWarmup.FILL_TIMEOUT,
                                    config.scheduler()).then()
                            : Mono.empty())
                    .then(Mono.fromCallable(() -> new Riffle(config, pool, owned, direct, sql)))
                    .onErrorResume(e -> disposeOwned.then(Mono.error(e)));
        });
    }

    /** The configuration this engine runs with. */
    public RiffleConfig config() {
        return config;
    }

    /**
     * Resolves an external-wait callback ({@link Job#registerCallback(Duration)}) registered by any engine on this
     * schema: the parked handler wakes with {@code payloadJson} (a JSON object). Cold. At most one resolution is
     * accepted: errors with {@link dev.riffle.engine.api.CallbackRejectedException} ({@code ALREADY_RESOLVED} or
     * {@code NOT_FOUND}, which includes a callback that timed out) and with
     * {@link dev.riffle.engine.api.InvalidJobException} for a payload that is not a JSON object within
     * {@link RiffleConfig#maxArgsBytes()}, or that {@code jsonb} cannot store (the database's refusal, field
     * {@code payload}); nothing is written then.
     */
    public Mono<Void> resumeExternal(java.util.UUID callbackId, String payloadJson) {
        return callbacks.resume(callbackId, payloadJson);
    }

    /** The enqueue client. */
    public JobClient client() {
        return enqueuer;
    }

    /**
     * Subscribes to one or more queues. Cold: each subscription runs its own demand-driven claim loop. A claim asks
     * for at most the outstanding demand (capped by {@link RiffleConfig#maxClaimBatch()}); with no demand nothing
     * is claimed. Jobs must be completed with {@link Job#complete()}. Cancelling the subscription stops claiming;
     * jobs claimed for it that can no longer be emitted are released (ready again at once). A database outage does
     * not end the {@code Flux}: claims back off and resume. A running attempt that is cancelled or rescued is
     * announced through {@link Job#cancellation()}; stopping the handler is up to the subscriber.
     *
     * @throws dev.riffle.engine.api.InvalidJobException when a queue name is invalid
     */
    public Flux<Job> subscribe(String... queues) {
        return subscribe(0, null, queues);
    }

    /**
     * Subscribes to several queues sharing the subscription by weight (docs/limits.md#weighted-sharing): while
     * several have work, claims go to them in proportion to their weights. Otherwise as {@link #subscribe(String...)}.
     */
    public Flux<Job> subscribe(dev.riffle.engine.api.QueueWeights weights) {
        java.util.Objects.requireNonNull(weights, "weights");
        return subscribe(0, weightArray(weights), weights.weights().keySet().toArray(String[]::new));
    }

    private static int[] weightArray(dev.riffle.engine.api.QueueWeights weights) {
        return weights.weights().values().stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * A subscription that may claim up to {@code prefetch} jobs beyond its subscriber's demand; none when one of the
     * queues has a deadline or materialized leases.
     */
    private Flux<Job> subscribe(int prefetch, int @Nullable [] weights, String... queues) {
        if (queues.length == 0) {
            throw new IllegalArgumentException("subscribe needs at least one queue");
        }
        for (String q : queues) {
            NewJob.checkName("queue", q);
        }
        Set<String> distinct = new LinkedHashSet<>(Arrays.asList(queues));
        String[] qs = distinct.toArray(String[]::new);
        queueGauges.see(qs);
        Integer[] deadlines = new Integer[qs.length];
        Boolean[] materialize = new Boolean[qs.length];
        int ahead = prefetch;
        for (int i = 0; i < qs.length; i++) {
            QueueConfig qc = config.queue(qs[i]);
            deadlines[i] = (int) qc.deadline().toSeconds();
            materialize[i] = qc.materialize();
            if (deadlines[i] > 0 || materialize[i]) {
                // Attempts with a deadline or a lease must not age claimed behind others: never claimed ahead.
                ahead = 0;
            }
        }
        ClaimLoop.Settings settings = new ClaimLoop.Settings(qs, deadlines, materialize, config.maxClaimBatch(),
                config.pollInterval(), config.safetyPollInterval(), config.busyRetryDelay(), config.claimLinger(),
                config.claimConcurrency(), ahead, limits, weights);
        return Flux.defer(() -> closed.get()
                ? Flux.error(new RiffleShutdownException("engine is closed"))
                : ClaimLoop.flux(claimer, settings, scheduler, clock, listener, liveSubscriptions));
    }

    /**
     * Runs handlers over one or more queues: each delivered job goes to the handler registered for its kind, with
     * at most {@code concurrency} handlers running at once (that is also the subscription's demand, so at most
     * that many jobs are claimed and not yet handled). The handler's outcome is recorded exactly once: an error is a
     * retry with the queue's backoff while attempts remain; an unknown kind fails terminally with a clear reason.
     *
     * <p>With {@link RiffleConfig#workPrefetch()} on (the default), up to {@code concurrency} more jobs (at least
     * {@link RiffleConfig#WORK_PREFETCH_FLOOR}) are claimed ahead of the running handlers, so the next claim overlaps the handlers of the last one; they wait claimed (and
     * heartbeated) until a slot is free, and are released at once when the {@code Flux} is cancelled or the engine
     * closes. Queues with a deadline or materialized leases are never claimed ahead.
     *
     * <p>A handler's slot is free as soon as the handler has finished and its outcome is queued for the completion
     * batcher; the outcome becomes durable in a later batch. Up to {@link RiffleConfig#workPendingOutcomes()}
     * outcomes may wait for durability at once; beyond that finished handlers keep their slots until one lands. Each
     * {@link JobResult} is emitted once its outcome is durable ({@code accepted == true}) or could not be recorded.
     * The delivery contract is unchanged: an outcome not yet durable when the process dies leaves its attempt open,
     * and rescue delivers the job again (at least once). With {@code subscribe(...)}, {@link Job#complete()} waits for
     * durability; to free slots the same way, run the handler in one {@code flatMap} and the outcome in a second
     * (README, "Handler slots and durability").
     *
     * <p>The engine owns the handler's subscription: when the attempt is taken away while the handler runs (an
     * operator's {@link RiffleAdmin#cancel(long)}, or a rescue), the handler's {@code Mono} is cancelled, nothing
     * is written for the attempt, and a {@link JobResult} with {@code accepted == false} is emitted.
     *
     * <p>Database outages do not end the returned {@code Flux}: claims back off and resume, and an outcome that
     * could not be recorded is reported as not accepted while its attempt stays open for rescue (which delivers
     * the job again). Cold; cancel the returned {@code Flux} to stop.
     *
     * @throws dev.riffle.engine.api.InvalidJobException when a queue name or a handler's kind is invalid
     */
    public Flux<JobResult> work(Map<String, JobHandler> handlers, int concurrency, String... queues) {
        return work(handlers, concurrency, null, queues);
    }

    /**
     * {@link #work(Map, int, String...)} over queues sharing the subscription by weight
     * (docs/limits.md#weighted-sharing): while several have work, claims go to them in proportion to their weights.
     */
    public Flux<JobResult> work(Map<String, JobHandler> handlers, int concurrency,
                                dev.riffle.engine.api.QueueWeights weights) {
        java.util.Objects.requireNonNull(weights, "weights");
        return work(handlers, concurrency, weightArray(weights), weights.weights().keySet().toArray(String[]::new));
    }

    private Flux<JobResult> work(Map<String, JobHandler> handlers, int concurrency, int @Nullable [] weights,
                                 String... queues) {
        Map<String, JobHandler> byKind = Map.copyOf(handlers);
        // A handler under a name no job can carry would never run: refuse it like any other bad kind.
        byKind.keySet().forEach(kind -> NewJob.checkName("kind", kind));
        if (concurrency < 1 || concurrency > MAX_WORK_CONCURRENCY) {
            throw new IllegalArgumentException("concurrency must be between 1 and " + MAX_WORK_CONCURRENCY + ", got "
                    + concurrency);
        }
        HandlerRunner runner = new HandlerRunner(byKind, outcomeFailures, metrics, clock);
        // Two stages, so a handler's slot is free once its handler finished and its outcome is queued for the
        // batcher, not once that outcome is durable: the first bounds running handlers (and the subscription's
        // demand, hence what is claimed), the second bounds outcomes waiting for durability. A full second stage
        // stops taking outcomes, so finished handlers keep their slots until one lands (backpressure).
        // One window claimed ahead of the running handlers, so the next claim runs while they do (workPrefetch).
        // The second stage is PendingOutcomes rather than a second flatMap: see its javadoc for why.
        return PendingOutcomes.run(config.workPendingOutcomes(), runner::record,
                outcomes -> subscribe(workPrefetch(config, concurrency), weights, queues)
                        .flatMap(job -> runner.handle(job).flatMap(outcomes::admit), concurrency, 1));
    }


    // Jobs claimed ahead of the running handlers: one window, never less than the floor, so a small handler count
    // still claims in batches large enough to amortise a claim's fixed cost.
    static int workPrefetch(RiffleConfig config, int concurrency) {
        return config.workPrefetch() ? Math.max(concurrency, RiffleConfig.WORK_PREFETCH_FLOOR) : 0;
    }

    /** Operator actions: cancel, pause and resume queues, cron schedules, DLQ. */
    public RiffleAdmin admin() {
        return admin;
    }

    /** Maintenance leadership and one-pass service runs. */
    public Maintenance maintenance() {
        return maintenance;
    }

    /**
     * Exact counts for {@code queue}; an admin read that scans the backlog. Errors with
     * {@link dev.riffle.engine.api.InvalidJobException} for an invalid queue name (which no job can carry, so zeros
     * would only hide a typo).
     */
    public Mono<QueueCounts> counts(String queue) {
        return Mono.defer(() -> {
            NewJob.checkName("queue", queue);
            return db.query("counts", st -> st.bind("$1", queue), row -> new QueueCounts(queue,
                    row.get("available", Long.class), row.get("in_flight", Long.class),
                    row.get("completed", Long.class), row.get("scheduled", Long.class),
                    Boolean.TRUE.equals(row.get("paused", Boolean.class)))).single();
        });
    }

    /**
     * Refreshes the cached gauges now (per-queue depths of the queues this engine subscribed to, dead tuples per
     * table), as the periodic refresh every {@link RiffleConfig#meterRefreshInterval()} does; empty without a meter
     * registry. Cold.
     */
    public Mono<Void> refreshMeters() {
        return queueGauges.refresh();
    }

    /** In-process counters since start. */
    public RiffleStats stats() {
        return new RiffleStats(claimer.claimBatches(), claimer.claimedJobs(), claimer.emptyClaims(),
                completer.flushes(), completer.completed(), completer.closed(), completer.rejected(),
                inFlight.size(), listener.isListening(), maintenance.isLeader(), maintenance.staleRescued(),
                maintenance.deadlineRescued(), maintenance.prunedSlots(), maintenance.leaseRescued(),
                callbacks.registered(), callbacks.resumed(), claimer.lockDetours(), claimer.running(),
                claimer.peakRunning());
    }


    /**
     * Stops claiming (live subscriptions complete), waits (up to 10 s) for the claims still in flight, also those of
     * subscriptions cancelled just before, and releases the jobs they bring back, stops accepting completions and
     * flushes the buffered ones and the releases,
     * flushes pending cursor advances, closes the listener, the leader session and the pool the engine created
     * (never the application's {@code ConnectionFactory}: its pool stays open and usable). Jobs already delivered but not completed
     * stay open in the database and are recovered by rescue. Cold; idempotent.
     */
    public Mono<Void> close() {
        return Mono.defer(() -> {
            if (!closed.compareAndSet(false, true)) {
                return Mono.empty();
            }
            List<ClaimLoop> loops = List.copyOf(liveSubscriptions);
            loops.forEach(ClaimLoop::complete);
            // Every step is deferred to its turn: these close() methods act when called, and the batcher's, called
            // while this chain was assembled, shut it before the loops quiesced, so releases of a claim that returned
            // after the stop were queued behind a batcher that had already reported done, and flushed to a closed pool.
            return Mono.when(loops.stream().map(ClaimLoop::quiesced).toList())
                    .timeout(CLOSE_QUIESCE_WAIT, Mono.empty())
                    .then(Mono.defer(completer::close))
                    .timeout(CLOSE_FLUSH_WAIT, Mono.empty())
                    // Past the grace, flushes still retrying through an outage give up; rescue owns their attempts.
                    .then(Mono.fromRunnable(completer::dispose))
                    .then(Mono.defer(advancer::close))
                    .then(Mono.defer(limits::close))
                    .then(Mono.fromRunnable(heartbeater::close))
                    .then(Mono.fromRunnable(callbacks::close))
                    .then(Mono.defer(maintenance::close))
                    .then(Mono.fromRunnable(cancelSignals::dispose))
                    .then(Mono.defer(listener::close))
                    .then(Mono.fromRunnable(queueGauges::close))
                    .then(Mono.fromRunnable(metrics::close))
                    // Only a pool the engine created: the application's factory stays the application's.
                    .then(ownedPool == null ? Mono.<Void>empty() : ownedPool.disposeLater())
                    .doOnSuccess(v -> log.info("riffle engine for schema {} closed", config.schema()));
        });
    }

    /**
     * Graceful shutdown: stop claiming (live subscriptions complete), give back jobs claimed but never delivered,
     * let running handlers finish and record their outcomes for up to {@code grace}, then {@link #close()}. Attempts
     * still running when the grace period ends stay open and are recovered by rescue. Cold.
     */
    public Mono<Void> shutdownGracefully(Duration grace) {
        Objects.requireNonNull(grace, "grace");
        return Mono.defer(() -> {
            List<ClaimLoop> loops = List.copyOf(liveSubscriptions);
            loops.forEach(ClaimLoop::complete);
            Mono<Void> drained = Flux.interval(Duration.ZERO, SHUTDOWN_DRAIN_POLL, scheduler)
                    .onBackpressureDrop()
                    .filter(t -> inFlight.size() == 0)
                    .next()
                    .then();
            return Mono.when(loops.stream().map(ClaimLoop::quiesced).toList())
                    .then(drained)
                    .timeout(grace, Mono.fromRunnable(() -> log.warn(
                            "grace period {} ended with {} attempts still running; they stay open for rescue",
                            grace, inFlight.size())))
                    .then(close());
        });
    }

    @Override
    public void dispose() {
        close().subscribe();
    }

    @Override
    public boolean isDisposed() {
        return closed.get();
    }
}
