package dev.riffle.engine;

import dev.riffle.engine.api.CronSchedule;
import dev.riffle.engine.api.ArgsCodec;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable engine configuration. Build with {@link #builder()}; every setting has a documented default and is
 * validated in {@link Builder#build()}.
 *
 * @param url where the database is, when the engine opens its own connections; exactly one of {@code url} and
 *            {@code connectionFactory} is set
 * @param connectionFactory the application's own R2DBC {@code ConnectionFactory} (r2dbc-postgresql driver), pooled
 *                          or not, for claims, completions, admin and non-transactional enqueue; exactly one of
 *                          {@code url} and {@code connectionFactory} is set. A factory that is not an r2dbc-pool
 *                          {@code ConnectionPool} is wrapped in the engine's own pool of {@code poolSize}; the engine
 *                          never closes the application's factory (docs/configuration.md, "Your own ConnectionFactory")
 * @param listenConnectionFactory where the long-lived LISTEN and maintenance-leader sessions come from (two
 *                                connections, held for the engine's lifetime; must not be a pool or pgbouncer in
 *                                transaction mode); null to derive it: the URL's, or the {@code connectionFactory}
 *                                unwrapped ({@code io.r2dbc.spi.Wrapped}) down to the driver's factory
 * @param migrationUrl where Flyway connects (JDBC, blocking) when {@code migrate} is set; null to use {@code url}.
 *                     Required for {@code migrate(true)} with a {@code connectionFactory}, whose JDBC coordinates the
 *                     engine cannot know
 * @param schema storage schema (validated once, always quoted)
 * @param migrate run Flyway migrations at start (needs {@code dev.riffle:riffle-migrations} on the classpath)
 * @param poolSize maximum connections of a pool the engine creates (from {@code url}, or around a non-pooled
 *                 {@code connectionFactory}); ignored for an application's {@code ConnectionPool}
 * @param applicationName {@code application_name} prefix of every connection the engine opens itself (not of the
 *                        connections of an application's {@code ConnectionPool})
 * @param maxClaimBatch upper bound of one claim; the subscriber's outstanding demand bounds it further
 * @param completionBatchSize completions per flush at most
 * @param completionWindow how long the first pending completion waits for company
 * @param completionFlushConcurrency completion flushes in flight at once; a flush next to one already in flight
 *        needs {@code completionBatchSize / 8} outcomes, or outcomes that waited ten windows
 * @param pollInterval how often an idle subscription with demand polls while LISTEN is down
 * @param safetyPollInterval how often it polls while LISTEN is up (a missed notification costs at most this); a
 *                           handler parked on an external callback re-checks its callback at this interval too
 * @param busyRetryDelay wait before retrying a claim when every lane with work was locked by another claimer
 * @param claimLinger how long a subscription with only a trickle of demand (less than half its window) waits for
 *                    more before claiming, so claims stay batches rather than single jobs
 * @param cursorAdvanceDelay coalescing window for post-commit claim cursor advances
 * @param maxArgsBytes largest accepted args JSON, in UTF-8 bytes
 * @param copyEnqueueThreshold batch size from which {@code enqueueMany} stages the batch with {@code COPY} and
 *                             enqueues it from the staging table in one statement, instead of sending it as array
 *                             parameters (docs/bulk-enqueue.md); 0 turns the COPY path off. Batches holding a job
 *                             with unique options always take the array path
 * @param workPendingOutcomes outcomes one {@code work(...)} call has queued for the completion batcher and that are
 *                            not durable yet, at most. A handler's slot is free once its outcome is queued; when
 *                            this many wait for durability, finished handlers hold their slots until one lands
 *                            (backpressure on the completion side). Outcomes lost with the process are attempts
 *                            left open, which rescue delivers again: the bound is also how many jobs a crash can
 *                            redeliver beyond the running handlers
 * @param workPrefetch whether {@code work(...)} claims up to one more window of jobs (its concurrency, at least
 *                     {@link #WORK_PREFETCH_FLOOR}) ahead of its running handlers, so a claim overlaps handling; never for queues with a deadline or
 *                     materialized leases. Default true; turn it off when handlers run long and several
 *                     processes share a queue, so no job waits claimed behind a slow handler
 * @param claimConcurrency claims one subscription keeps in flight at once, at most (each on a different lane:
 *                         a lane's head is locked by the claim that reads it). More than one only when the
 *                         last claim came back full and the room left beside the claims in flight is a full
 *                         batch ({@code maxClaimBatch}): a window one claim can hold is claimed one claim at a time
 * @param queues per-queue settings (deadline, DLQ policy); queues not listed use {@link QueueConfig#of(String)}
 * @param dlqByDefault whether exhausted or failed jobs go to the DLQ when their queue does not say (default true)
 * @param maintenance maintenance leader settings
 * @param meterRegistry optional Micrometer {@code MeterRegistry}, or null; typed as Object here so Micrometer
 *                      stays an optional dependency, and set through the typed
 *                      {@link Builder#meterRegistry(MeterRegistry)}. Anything else is refused
 * @param clock the engine's one local clock: timestamps it takes and every elapsed-time check (heartbeat age, idle
 *              claim loops, outage durations). With the default system clock, elapsed time is measured with the
 *              monotonic {@code System.nanoTime()}; any other clock (a test's, driven by a virtual-time scheduler)
 *              is read for both. Database state always uses the database clock.
 * @param scheduler the engine's one scheduler for timers: claim retries and lingers, completion windows, cursor
 *                  advances, heartbeats, callback re-checks, maintenance loops and shutdown polls. Inject a
 *                  {@code VirtualTimeScheduler} (with a clock reading it) to drive them in virtual time.
 * @param schedules cron schedules registered in code (docs/cron.md), names unique; the engine stores each at start
 *                  (created, or changed when its definition differs; pause state and last fire are kept). Default none
 * @param argsCodec maps typed job args to and from JSON ({@link NewJob.Builder#typedArgs(Object)},
 *                  {@link dev.riffle.engine.api.Job#args(Class)}); null (the default) for JSON strings only
 *                  (docs/args-codec.md)
 * @param meterRefreshInterval how often the cached gauges (per-queue depths, dead tuples; docs/operations.md) are
 *                             refreshed by one query, when a {@code meterRegistry} is set; zero for never (default
 *                             {@link #DEFAULT_METER_REFRESH_INTERVAL})
 * @param observationRegistry optional Micrometer {@code ObservationRegistry}, or null (the default: nothing observed,
 *                            nothing stored); typed as Object like {@code meterRegistry}, set through the typed
 *                            {@link Builder#observationRegistry(ObservationRegistry)}. With one, enqueue, claim,
 *                            handler and completion are observed and the trace context current at enqueue is stored
 *                            with the job and continued by its handler (docs/tracing.md)
 * @param warmPool open a pool the engine creates in full at start and warm each of its connections once, when it
 *                 opens, by planning the claim and completion functions (default {@value #DEFAULT_WARM_POOL}); no
 *                 effect on an application's {@code ConnectionPool}
 */
public record RiffleConfig(@Nullable DatabaseUrl url, @Nullable ConnectionFactory connectionFactory,
                           @Nullable ConnectionFactory listenConnectionFactory, @Nullable DatabaseUrl migrationUrl,
                           String schema, boolean migrate, int poolSize, String applicationName,
                           int maxClaimBatch, int completionBatchSize, Duration completionWindow,
                           int completionFlushConcurrency, Duration pollInterval, Duration safetyPollInterval,
                           Duration busyRetryDelay, Duration claimLinger, Duration cursorAdvanceDelay, int maxArgsBytes,
                           int copyEnqueueThreshold, int workPendingOutcomes, boolean workPrefetch, int claimConcurrency,
                           Map<String, QueueConfig> queues, boolean dlqByDefault, MaintenanceConfig maintenance,
                           @Nullable Object meterRegistry, Clock clock, Scheduler scheduler,
                           List<CronSchedule> schedules,
                           @Nullable ArgsCodec argsCodec, Duration meterRefreshInterval,
                           @Nullable Object observationRegistry, boolean warmPool) {

    /** Default of {@link Builder#warmPool(boolean)}: {@value}. */
    public static final boolean DEFAULT_WARM_POOL = true;

    /** Default schema: {@value}. */
    public static final String DEFAULT_SCHEMA = "riffle";
    /** Default pool size: {@value}. */
    public static final int DEFAULT_POOL_SIZE = 10;
    /** Default claim batch cap: {@value} (docs/design/maintenance.md). */
    public static final int DEFAULT_MAX_CLAIM_BATCH = 512;
    /** Default completion batch size: {@value}. */
    public static final int DEFAULT_COMPLETION_BATCH_SIZE = 512;
    /** Default completion window: 1 ms. */
    public static final Duration DEFAULT_COMPLETION_WINDOW = Duration.ofMillis(1);
    /** Default concurrent completion flushes: {@value} (overlapping commits share WAL flushes). */
    public static final int DEFAULT_COMPLETION_FLUSH_CONCURRENCY = 4;
    /** Default poll interval while LISTEN is down: 200 ms. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
    /** Default refresh of the cached gauges: 10 s. */
    public static final Duration DEFAULT_METER_REFRESH_INTERVAL = Duration.ofSeconds(10);
    /** Default poll interval while LISTEN is up: 5 s. */
    public static final Duration DEFAULT_SAFETY_POLL_INTERVAL = Duration.ofSeconds(5);
    /** Default busy retry: 2 ms. */
    public static final Duration DEFAULT_BUSY_RETRY_DELAY = Duration.ofMillis(2);
    /** Default claim linger: 2 ms. */
    public static final Duration DEFAULT_CLAIM_LINGER = Duration.ofMillis(2);
    /** Default cursor advance coalescing window: 20 ms. */
    public static final Duration DEFAULT_CURSOR_ADVANCE_DELAY = Duration.ofMillis(20);
    /** Default args limit: 256 KiB. */
    public static final int DEFAULT_MAX_ARGS_BYTES = 256 * 1024;
    /**
     * Default {@link #copyEnqueueThreshold()}: {@value}, the COPY path off. Both paths end in the same
     * {@code enqueue_jobs}, which is most of the cost: COPY measured level with the array path in jobs/s and WAL
     * per job (docs/bulk-enqueue.md, docs/adr/0014), while it needs the {@code TEMPORARY} privilege and, on an
     * autocommit connection, a transaction of its own. {@link #SUGGESTED_COPY_ENQUEUE_THRESHOLD} turns it on.
     */
    public static final int DEFAULT_COPY_ENQUEUE_THRESHOLD = 0;
    /** A threshold that turns the COPY path on for large batches only: {@value} jobs. */
    public static final int SUGGESTED_COPY_ENQUEUE_THRESHOLD = 1000;
    /** Default bound on outcomes per {@code work(...)} call queued but not yet durable: {@value}. */
    public static final int DEFAULT_WORK_PENDING_OUTCOMES = 1024;
    /** Default claims in flight per subscription: {@value} (docs/benchmarks.md). */
    public static final int DEFAULT_CLAIM_CONCURRENCY = 2;
    /**
     * Jobs {@code work(...)} claims ahead of its running handlers at least, whatever its concurrency, when
     * {@link #workPrefetch()} is on: with a window of only {@code concurrency} jobs, a small handler count makes
     * small claims (16 handlers: claims of about 16 jobs) whose fixed cost per call dominates. 64 measured
     * 2.3x the drain rate of 16 handlers doing 1 ms of work (docs/adr/0009, item 3).
     */
    public static final int WORK_PREFETCH_FLOOR = 64;

    /** Schema names the engine accepts (the same rule as the migrations'). */
    private static final Pattern SCHEMA_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    /** Validates and freezes. */
    public RiffleConfig {
        if (url == null && connectionFactory == null) {
            throw new IllegalArgumentException("a database is required: set url(...) or connectionFactory(...)");
        }
        if (url != null && connectionFactory != null) {
            throw new IllegalArgumentException("url and connectionFactory are both set: set exactly one (the engine "
                    + "either opens its own connections from the url or uses the application's ConnectionFactory)");
        }
        if (listenConnectionFactory != null && connectionFactory == null) {
            throw new IllegalArgumentException("listenConnectionFactory is only for connectionFactory(...): with a url "
                    + "the engine opens its LISTEN and leader sessions from the url");
        }
        if (connectionFactory != null) {
            requirePostgres("connectionFactory", connectionFactory);
        }
        if (listenConnectionFactory != null) {
            requirePostgres("listenConnectionFactory", listenConnectionFactory);
            if (dev.riffle.engine.internal.sql.Connections.isPooled(listenConnectionFactory)) {
                throw new IllegalArgumentException("listenConnectionFactory must open sessions of its own, not pooled "
                        + "connections (LISTEN and the leader's advisory lock live as long as the engine): pass the "
                        + "driver's PostgresqlConnectionFactory, e.g. connectionPool.unwrap()");
            }
        }
        if (migrate && url == null && migrationUrl == null) {
            throw new IllegalArgumentException("migrate(true) with a connectionFactory needs migrationUrl(...): Flyway "
                    + "connects over JDBC and cannot use an R2DBC ConnectionFactory. Set migrationUrl, or set "
                    + "migrate(false) and run the migrations yourself (docs/migrations.md)");
        }
        if (meterRegistry != null && !isInstance("io.micrometer.core.instrument.MeterRegistry", meterRegistry)) {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry, got "
                    + meterRegistry.getClass().getName());
        }
        if (observationRegistry != null
                && !isInstance("io.micrometer.observation.ObservationRegistry", observationRegistry)) {
            throw new IllegalArgumentException("observationRegistry must be an "
                    + "io.micrometer.observation.ObservationRegistry, got " + observationRegistry.getClass().getName());
        }
        Objects.requireNonNull(schema, "schema");
        if (!SCHEMA_NAME.matcher(schema).matches()) {
            throw new IllegalArgumentException("schema name '" + schema
                    + "' is invalid: it must match [a-z_][a-z0-9_]{0,62} (lower-case letters, digits, underscore)");
        }
        requireRange("poolSize", poolSize, 2, 1000);
        requireRange("maxClaimBatch", maxClaimBatch, 1, 10_000);
        requireRange("completionBatchSize", completionBatchSize, 1, 10_000);
        requireRange("completionFlushConcurrency", completionFlushConcurrency, 1, 64);
        requireRange("maxArgsBytes", maxArgsBytes, 2, 64 * 1024 * 1024);
        requireRange("copyEnqueueThreshold", copyEnqueueThreshold, 0, Integer.MAX_VALUE);
        requireRange("workPendingOutcomes", workPendingOutcomes, 1, 1_000_000);
        requireRange("claimConcurrency", claimConcurrency, 1, 64);
        requirePositive("completionWindow", completionWindow);
        requirePositive("pollInterval", pollInterval);
        requirePositive("safetyPollInterval", safetyPollInterval);
        requirePositive("busyRetryDelay", busyRetryDelay);
        requirePositive("claimLinger", claimLinger);
        requirePositive("cursorAdvanceDelay", cursorAdvanceDelay);
        Objects.requireNonNull(meterRefreshInterval, "meterRefreshInterval");
        if (meterRefreshInterval.isNegative()) {
            throw new IllegalArgumentException("meterRefreshInterval must be zero (never) or positive, got "
                    + meterRefreshInterval);
        }
        Objects.requireNonNull(applicationName, "applicationName");
        queues = Map.copyOf(queues);
        Objects.requireNonNull(maintenance, "maintenance");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(scheduler, "scheduler");
        schedules = List.copyOf(schedules);
        Set<String> names = new HashSet<>();
        for (CronSchedule s : schedules) {
            if (!names.add(s.name())) {
                throw new IllegalArgumentException("schedules: '" + s.name() + "' is registered twice");
            }
        }
    }

    /**
     * Whether terminal failures of {@code queue} go to the DLQ by this engine's configuration: the queue's
     * {@link QueueConfig#dlq()} if set, else {@link #dlqByDefault()}. The policy every exit path applies is the one
     * recorded in the schema: each engine records its explicit queue policies at start (the last to start wins, for
     * every engine's exits alike), and only a queue with no recorded policy falls back to the default of the engine
     * that runs the exit (docs/design/delivery-contract.md).
     *
     * @throws dev.riffle.engine.api.InvalidJobException when {@code queue} is not a valid queue name
     */
    public boolean dlqFor(String queue) {
        QueueConfig q = queues.get(NewJob.checkName("queue", queue));
        return q != null && q.dlq() != null ? q.dlq() : dlqByDefault;
    }

    /** The metadata name of r2dbc-postgresql's factories (and of an r2dbc-pool {@code ConnectionPool} over one). */
    static final String POSTGRES_DRIVER_NAME = "PostgreSQL";

    private static void requirePostgres(String field, ConnectionFactory factory) {
        String name;
        try {
            name = factory.getMetadata().getName();
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(field + ": cannot read the factory's metadata (" + e + ")", e);
        }
        if (!POSTGRES_DRIVER_NAME.equals(name)) {
            throw new IllegalArgumentException(field + " must be a PostgreSQL factory (org.postgresql:r2dbc-postgresql, "
                    + "pooled or not), got driver '" + name + "'");
        }
    }

    /** Whether {@code registry} is a {@code type}, loading that optional type only from the registry's own loader. */
    private static boolean isInstance(String type, Object registry) {
        try {
            return Class.forName(type, false, registry.getClass().getClassLoader()).isInstance(registry);
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private static void requireRange(String field, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", got " + v);
        }
    }

    private static void requirePositive(String field, Duration d) {
        if (d == null || d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException(field + " must be a positive duration, got " + d);
        }
    }

    /** Settings of {@code queue}, defaulting to no deadline. */
    public QueueConfig queue(String queue) {
        QueueConfig q = queues.get(queue);
        return q != null ? q : QueueConfig.of(queue);
    }

    /** A builder with every default set; a {@code url} or a {@code connectionFactory} is required. */
    public static Builder builder() {
        return new Builder();
    }

    /** Mutable builder for {@link RiffleConfig}. */
    public static final class Builder {
        private @Nullable DatabaseUrl url;
        private @Nullable ConnectionFactory connectionFactory;
        private @Nullable ConnectionFactory listenConnectionFactory;
        private @Nullable DatabaseUrl migrationUrl;
        private String schema = DEFAULT_SCHEMA;
        private boolean migrate = true;
        private int poolSize = DEFAULT_POOL_SIZE;
        private String applicationName = "riffle";
        private int maxClaimBatch = DEFAULT_MAX_CLAIM_BATCH;
        private int completionBatchSize = DEFAULT_COMPLETION_BATCH_SIZE;
        private Duration completionWindow = DEFAULT_COMPLETION_WINDOW;
        private int completionFlushConcurrency = DEFAULT_COMPLETION_FLUSH_CONCURRENCY;
        private Duration pollInterval = DEFAULT_POLL_INTERVAL;
        private Duration safetyPollInterval = DEFAULT_SAFETY_POLL_INTERVAL;
        private Duration busyRetryDelay = DEFAULT_BUSY_RETRY_DELAY;
        private Duration claimLinger = DEFAULT_CLAIM_LINGER;
        private Duration cursorAdvanceDelay = DEFAULT_CURSOR_ADVANCE_DELAY;
        private int maxArgsBytes = DEFAULT_MAX_ARGS_BYTES;
        private int copyEnqueueThreshold = DEFAULT_COPY_ENQUEUE_THRESHOLD;
        private int workPendingOutcomes = DEFAULT_WORK_PENDING_OUTCOMES;
        private int claimConcurrency = DEFAULT_CLAIM_CONCURRENCY;
        private boolean workPrefetch = true;
        private final Map<String, QueueConfig> queues = new LinkedHashMap<>();
        private @Nullable Object meterRegistry;
        private boolean dlqByDefault = true;
        private MaintenanceConfig maintenance = MaintenanceConfig.defaults();
        private Clock clock = Clock.systemUTC();
        private Scheduler scheduler = Schedulers.parallel();
        private final List<CronSchedule> schedules = new ArrayList<>();
        private @Nullable ArgsCodec argsCodec;
        private Duration meterRefreshInterval = DEFAULT_METER_REFRESH_INTERVAL;
        private @Nullable Object observationRegistry;
        private boolean warmPool = DEFAULT_WARM_POOL;

        private Builder() {}

        /**
         * Codec for typed job args (default none: JSON strings only). With one, {@link NewJob.Builder#typedArgs(Object)}
         * is encoded at enqueue and {@link dev.riffle.engine.api.Job#args(Class)} decodes; see
         * {@code dev.riffle:riffle-jackson} for a Jackson-based codec (docs/args-codec.md).
         */
        public Builder argsCodec(@Nullable ArgsCodec argsCodec) {
            this.argsCodec = argsCodec;
            return this;
        }

        /** DLQ for terminal failures when the queue does not say (default true). */
        public Builder dlqByDefault(boolean dlqByDefault) {
            this.dlqByDefault = dlqByDefault;
            return this;
        }

        /** Maintenance settings (default {@link MaintenanceConfig#defaults()}). */
        public Builder maintenance(MaintenanceConfig maintenance) {
            this.maintenance = maintenance;
            return this;
        }

        /**
         * Database location: the engine opens its own pool ({@code poolSize}) and LISTEN/leader sessions from it.
         * Exactly one of {@code url} and {@link #connectionFactory(ConnectionFactory)} is required.
         */
        public Builder url(DatabaseUrl url) {
            this.url = Objects.requireNonNull(url, "url");
            return this;
        }

        /** Database location in any form {@link DatabaseUrl#parse(String)} accepts; see {@link #url(DatabaseUrl)}. */
        public Builder url(String url) {
            return url(DatabaseUrl.parse(url));
        }

        /**
         * The application's own R2DBC {@code ConnectionFactory} (org.postgresql:r2dbc-postgresql), for claims,
         * completions, admin and non-transactional enqueue; exactly one of this and {@link #url(DatabaseUrl)} is
         * required. An r2dbc-pool {@code ConnectionPool} is used as it is (its size bounds the engine too, and
         * {@code poolSize} is ignored); any other factory is wrapped in the engine's own {@code ConnectionPool} of
         * {@code poolSize}, which {@link Riffle#close()} disposes. The engine never closes the application's factory.
         * Connections must be in auto-commit mode (the R2DBC default) when handed out; the engine sets nothing on
         * the application's pooled sessions. LISTEN and leader sessions: {@link #listenConnectionFactory}.
         */
        public Builder connectionFactory(ConnectionFactory connectionFactory) {
            this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
            return this;
        }

        /**
         * Where the two long-lived sessions come from, with {@link #connectionFactory(ConnectionFactory)}: the
         * LISTEN session (wake-ups, cancel signals, callbacks) and the maintenance leader's advisory-lock session.
         * Each {@code create()} must open a real PostgreSQL session of its own (not a pooled connection, not
         * pgbouncer in transaction mode: LISTEN and session advisory locks need one server session throughout).
         * Default: the {@code connectionFactory} unwrapped ({@code io.r2dbc.spi.Wrapped}, e.g. a
         * {@code ConnectionPool}) down to the driver's factory, or the factory itself when it wraps nothing.
         */
        public Builder listenConnectionFactory(ConnectionFactory listenConnectionFactory) {
            this.listenConnectionFactory = Objects.requireNonNull(listenConnectionFactory, "listenConnectionFactory");
            return this;
        }

        /**
         * Where Flyway connects when {@code migrate} is on (default: the {@code url}). Required for
         * {@code migrate(true)} with a {@link #connectionFactory(ConnectionFactory)}; it may also name a user with
         * DDL rights different from the engine's.
         */
        public Builder migrationUrl(DatabaseUrl migrationUrl) {
            this.migrationUrl = Objects.requireNonNull(migrationUrl, "migrationUrl");
            return this;
        }

        /** {@link #migrationUrl(DatabaseUrl)} in any form {@link DatabaseUrl#parse(String)} accepts. */
        public Builder migrationUrl(String migrationUrl) {
            return migrationUrl(DatabaseUrl.parse(migrationUrl));
        }

        /** Storage schema (default {@value RiffleConfig#DEFAULT_SCHEMA}). */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /**
         * Run Riffle's Flyway migrations at start (default true, so the simple case works out of the box). Needs
         * {@code dev.riffle:riffle-migrations} on the classpath (start fails naming it otherwise) and, with a
         * {@code connectionFactory}, a {@link #migrationUrl(DatabaseUrl)}. Off: the schema must already be migrated
         * (by the application's own Flyway, docs/migrations.md), and no Flyway or JDBC class is loaded.
         */
        public Builder migrate(boolean migrate) {
            this.migrate = migrate;
            return this;
        }

        /**
         * Size of the pool the engine creates, from the {@code url} or around a non-pooled
         * {@code connectionFactory} (default {@value RiffleConfig#DEFAULT_POOL_SIZE}); ignored for an application's
         * {@code ConnectionPool}.
         */
        public Builder poolSize(int poolSize) {
            this.poolSize = poolSize;
            return this;
        }

        /** application_name prefix (default {@code riffle}). */
        public Builder applicationName(String applicationName) {
            this.applicationName = applicationName;
            return this;
        }

        /** Claim batch cap (default {@value RiffleConfig#DEFAULT_MAX_CLAIM_BATCH}). */
        public Builder maxClaimBatch(int maxClaimBatch) {
            this.maxClaimBatch = maxClaimBatch;
            return this;
        }

        /** Completion batch size (default {@value RiffleConfig#DEFAULT_COMPLETION_BATCH_SIZE}). */
        public Builder completionBatchSize(int completionBatchSize) {
            this.completionBatchSize = completionBatchSize;
            return this;
        }

        /** Completion window (default 1 ms). */
        public Builder completionWindow(Duration completionWindow) {
            this.completionWindow = completionWindow;
            return this;
        }

        /**
         * Concurrent completion flushes (default {@value RiffleConfig#DEFAULT_COMPLETION_FLUSH_CONCURRENCY}). A flush
         * starts next to one already in flight only for {@code completionBatchSize / 8} outcomes or more, or for
         * outcomes that have waited ten {@code completionWindow}s; fewer wait for the flush in flight and go with it.
         */
        public Builder completionFlushConcurrency(int completionFlushConcurrency) {
            this.completionFlushConcurrency = completionFlushConcurrency;
            return this;
        }

        /** Poll interval while LISTEN is down (default 200 ms). */
        public Builder pollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
            return this;
        }

        /** Poll interval while LISTEN is up (default 5 s). */
        public Builder safetyPollInterval(Duration safetyPollInterval) {
            this.safetyPollInterval = safetyPollInterval;
            return this;
        }

        /** Busy retry delay (default 2 ms). */
        public Builder busyRetryDelay(Duration busyRetryDelay) {
            this.busyRetryDelay = busyRetryDelay;
            return this;
        }

        /** Claim linger for trickling demand (default 2 ms). */
        public Builder claimLinger(Duration claimLinger) {
            this.claimLinger = claimLinger;
            return this;
        }

        /** Cursor advance coalescing window (default 20 ms). */
        public Builder cursorAdvanceDelay(Duration cursorAdvanceDelay) {
            this.cursorAdvanceDelay = cursorAdvanceDelay;
            return this;
        }

        /** Largest args JSON in bytes (default 256 KiB). */
        public Builder maxArgsBytes(int maxArgsBytes) {
            this.maxArgsBytes = maxArgsBytes;
            return this;
        }

        /**
         * Batch size from which {@code enqueueMany} uses {@code COPY} into a session staging table (default
         * {@value RiffleConfig#DEFAULT_COPY_ENQUEUE_THRESHOLD}: off; e.g.
         * {@value RiffleConfig#SUGGESTED_COPY_ENQUEUE_THRESHOLD} turns it on for large batches). Same validation,
         * same {@code enqueue_jobs} function, same NOTIFY on commit as the array path (docs/bulk-enqueue.md). The
         * role needs the {@code TEMPORARY} privilege on the database (PostgreSQL grants it to everyone by default).
         */
        public Builder copyEnqueueThreshold(int copyEnqueueThreshold) {
            this.copyEnqueueThreshold = copyEnqueueThreshold;
            return this;
        }

        /** Outcomes per {@code work(...)} call queued but not durable yet, at most (default {@value RiffleConfig#DEFAULT_WORK_PENDING_OUTCOMES}). */
        public Builder workPendingOutcomes(int workPendingOutcomes) {
            this.workPendingOutcomes = workPendingOutcomes;
            return this;
        }

        /** Whether {@code work(...)} claims one window ahead of its running handlers (default true). */
        public Builder workPrefetch(boolean workPrefetch) {
            this.workPrefetch = workPrefetch;
            return this;
        }

        /** Claims in flight per subscription, at most (default {@value RiffleConfig#DEFAULT_CLAIM_CONCURRENCY}). */
        public Builder claimConcurrency(int claimConcurrency) {
            this.claimConcurrency = claimConcurrency;
            return this;
        }

        /**
         * Registers a cron schedule (docs/cron.md); the engine stores it at start. A second schedule with the same
         * name fails {@link #build()}.
         */
        public Builder schedule(CronSchedule schedule) {
            this.schedules.add(Objects.requireNonNull(schedule, "schedule"));
            return this;
        }

        /** Adds or replaces a queue's settings. */
        public Builder queue(QueueConfig queue) {
            this.queues.put(queue.name(), queue);
            return this;
        }

        /**
         * Micrometer registry to publish metrics to (default none). Micrometer is an optional dependency: this
         * method is the only place its type appears, and it is loaded only when called.
         */
        public Builder meterRegistry(@Nullable MeterRegistry meterRegistry) {
            this.meterRegistry = meterRegistry;
            return this;
        }

        /**
         * How often the cached gauges are refreshed, by one query (default
         * {@link RiffleConfig#DEFAULT_METER_REFRESH_INTERVAL}; zero: never, {@code Riffle.refreshMeters()} only).
         */
        public Builder meterRefreshInterval(Duration meterRefreshInterval) {
            this.meterRefreshInterval = meterRefreshInterval;
            return this;
        }

        /**
         * Micrometer {@code ObservationRegistry} to observe enqueue, claim, handler and completion with (default
         * none: nothing observed, no trace context stored). With a tracer bridge on it (Brave or OpenTelemetry), the
         * trace context current at enqueue is stored with the job and its handler continues that trace, in whichever
         * process runs it (docs/tracing.md). Micrometer is an optional dependency: this method is the only place
         * its type appears, and it is loaded only when called.
         */
        public Builder observationRegistry(@Nullable ObservationRegistry observationRegistry) {
            this.observationRegistry = observationRegistry;
            return this;
        }

        /**
         * Whether a pool the engine creates (from {@code url}, or around a non-pooled {@code connectionFactory}) is
         * opened in full at start and warmed (default {@value #DEFAULT_WARM_POOL}). Each connection runs
         * {@code warm_session()} once, when it opens: it compiles and plans the claim and completion functions
         * without reading a job or writing anything, a few milliseconds of server time per connection. Without it a
         * fresh backend spends 10-35 ms on its first claim and 7-15 ms on its first completion, and an engine that
         * starts under load pays that on every connection at once: in the bench, whole-run pickup p99 at 4,000
         * jobs/s was 228-900 ms without the warm-up and 22-98 ms with it (docs/benchmarks.md, "Session 12"). Start
         * waits at most 5 s for the pool to fill. Off: connections open on demand and plan on first use. No effect
         * on an application's {@code ConnectionPool}, which is the application's to size and warm.
         */
        public Builder warmPool(boolean warmPool) {
            this.warmPool = warmPool;
            return this;
        }

        /** The engine's local clock (default {@code Clock.systemUTC()}, elapsed time then by {@code System.nanoTime()}). */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /** The engine's timer scheduler (default {@code Schedulers.parallel()}). */
        public Builder scheduler(Scheduler scheduler) {
            this.scheduler = scheduler;
            return this;
        }

        /** Validates and builds. */
        public RiffleConfig build() {
            return new RiffleConfig(url, connectionFactory, listenConnectionFactory, migrationUrl, schema, migrate, poolSize, applicationName, maxClaimBatch,
                    completionBatchSize, completionWindow, completionFlushConcurrency, pollInterval,
                    safetyPollInterval, busyRetryDelay, claimLinger, cursorAdvanceDelay, maxArgsBytes,
                    copyEnqueueThreshold, workPendingOutcomes, workPrefetch, claimConcurrency, queues, dlqByDefault,
                    maintenance, meterRegistry, clock, scheduler, schedules,
                    argsCodec, meterRefreshInterval, observationRegistry, warmPool);
        }
    }
}
