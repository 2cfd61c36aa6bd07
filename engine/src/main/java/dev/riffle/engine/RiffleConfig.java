package dev.riffle.engine;

import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.migrations.RiffleMigrations;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Immutable engine configuration. Build with {@link #builder()}; every setting has a documented default and is
 * validated in {@link Builder#build()}.
 *
 * @param url where the database is
 * @param schema storage schema (validated once, always quoted)
 * @param migrate run Flyway migrations at start
 * @param poolSize maximum pooled connections
 * @param applicationName {@code application_name} prefix of every engine connection
 * @param maxClaimBatch upper bound of one claim; the subscriber's outstanding demand bounds it further
 * @param completionBatchSize completions per flush at most
 * @param completionWindow how long the first pending completion waits for company
 * @param completionFlushConcurrency completion flushes in flight at once
 * @param pollInterval how often an idle subscription with demand polls while LISTEN is down
 * @param safetyPollInterval how often it polls while LISTEN is up (a missed notification costs at most this); a
 *                           handler parked on an external callback re-checks its callback at this interval too
 * @param busyRetryDelay wait before retrying a claim when every lane with work was locked by another claimer
 * @param claimLinger how long a subscription with only a trickle of demand (less than half its window) waits for
 *                    more before claiming, so claims stay batches rather than single jobs
 * @param cursorAdvanceDelay coalescing window for post-commit claim cursor advances
 * @param maxArgsBytes largest accepted args JSON, in UTF-8 bytes
 * @param workPendingOutcomes outcomes one {@code work(...)} call has queued for the completion batcher and that are
 *                            not durable yet, at most. A handler's slot is free once its outcome is queued; when
 *                            this many wait for durability, finished handlers hold their slots until one lands
 *                            (backpressure on the completion side). Outcomes lost with the process are attempts
 *                            left open, which rescue delivers again: the bound is also how many jobs a crash can
 *                            redeliver beyond the running handlers
 * @param workPrefetch whether {@code work(...)} claims up to one more window of jobs (its concurrency) ahead of
 *                     its running handlers, so a claim overlaps handling; never for queues with a deadline or
 *                     materialized leases. Default true; turn it off when handlers run long and several
 *                     processes share a queue, so no job waits claimed behind a slow handler
 * @param claimConcurrency claims one subscription keeps in flight at once, at most (each on a different lane:
 *                         a lane's head is locked by the claim that reads it). More than one only when the
 *                         subscriber's demand is larger than one claim takes and the last claim came back full
 * @param queues per-queue settings (deadline, DLQ policy); queues not listed use {@link QueueConfig#of(String)}
 * @param dlqByDefault whether exhausted or failed jobs go to the DLQ when their queue does not say (default true)
 * @param maintenance maintenance leader settings
 * @param meterRegistry optional Micrometer {@code MeterRegistry} (typed as Object so Micrometer stays optional)
 * @param clock the engine's one local clock: timestamps it takes and every elapsed-time check (heartbeat age, idle
 *              claim loops, outage durations). With the default system clock, elapsed time is measured with the
 *              monotonic {@code System.nanoTime()}; any other clock (a test's, driven by a virtual-time scheduler)
 *              is read for both. Database state always uses the database clock.
 * @param scheduler the engine's one scheduler for timers: claim retries and lingers, completion windows, cursor
 *                  advances, heartbeats, callback re-checks, maintenance loops and shutdown polls. Inject a
 *                  {@code VirtualTimeScheduler} (with a clock reading it) to drive them in virtual time.
 */
public record RiffleConfig(DatabaseUrl url, String schema, boolean migrate, int poolSize, String applicationName,
                           int maxClaimBatch, int completionBatchSize, Duration completionWindow,
                           int completionFlushConcurrency, Duration pollInterval, Duration safetyPollInterval,
                           Duration busyRetryDelay, Duration claimLinger, Duration cursorAdvanceDelay, int maxArgsBytes,
                           int workPendingOutcomes, boolean workPrefetch, int claimConcurrency,
                           Map<String, QueueConfig> queues, boolean dlqByDefault, MaintenanceConfig maintenance,
                           @Nullable Object meterRegistry, Clock clock, Scheduler scheduler) {

    /** Default schema: {@value}. */
    public static final String DEFAULT_SCHEMA = RiffleMigrations.DEFAULT_SCHEMA;
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
    /** Default bound on outcomes per {@code work(...)} call queued but not yet durable: {@value}. */
    public static final int DEFAULT_WORK_PENDING_OUTCOMES = 1024;
    /** Default claims in flight per subscription: {@value} (docs/benchmarks.md). */
    public static final int DEFAULT_CLAIM_CONCURRENCY = 2;

    /** Validates and freezes. */
    public RiffleConfig {
        Objects.requireNonNull(url, "url");
        RiffleMigrations.validateSchemaName(schema);
        requireRange("poolSize", poolSize, 2, 1000);
        requireRange("maxClaimBatch", maxClaimBatch, 1, 10_000);
        requireRange("completionBatchSize", completionBatchSize, 1, 10_000);
        requireRange("completionFlushConcurrency", completionFlushConcurrency, 1, 64);
        requireRange("maxArgsBytes", maxArgsBytes, 2, 64 * 1024 * 1024);
        requireRange("workPendingOutcomes", workPendingOutcomes, 1, 1_000_000);
        requireRange("claimConcurrency", claimConcurrency, 1, 64);
        requirePositive("completionWindow", completionWindow);
        requirePositive("pollInterval", pollInterval);
        requirePositive("safetyPollInterval", safetyPollInterval);
        requirePositive("busyRetryDelay", busyRetryDelay);
        requirePositive("claimLinger", claimLinger);
        requirePositive("cursorAdvanceDelay", cursorAdvanceDelay);
        Objects.requireNonNull(applicationName, "applicationName");
        queues = Map.copyOf(queues);
        Objects.requireNonNull(maintenance, "maintenance");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(scheduler, "scheduler");
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

    /** A builder with every default set; only the URL is required. */
    public static Builder builder() {
        return new Builder();
    }

    /** Mutable builder for {@link RiffleConfig}. */
    public static final class Builder {
        private @Nullable DatabaseUrl url;
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
        private int workPendingOutcomes = DEFAULT_WORK_PENDING_OUTCOMES;
        private int claimConcurrency = DEFAULT_CLAIM_CONCURRENCY;
        private boolean workPrefetch = true;
        private final Map<String, QueueConfig> queues = new LinkedHashMap<>();
        private @Nullable Object meterRegistry;
        private boolean dlqByDefault = true;
        private MaintenanceConfig maintenance = MaintenanceConfig.defaults();
        private Clock clock = Clock.systemUTC();
        private Scheduler scheduler = Schedulers.parallel();

        private Builder() {}

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

        /** Database location (required). */
        public Builder url(DatabaseUrl url) {
            this.url = url;
            return this;
        }

        /** Database location in any form {@link DatabaseUrl#parse(String)} accepts (required). */
        public Builder url(String url) {
            return url(DatabaseUrl.parse(url));
        }

        /** Storage schema (default {@value RiffleConfig#DEFAULT_SCHEMA}). */
        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        /** Run migrations at start (default true). */
        public Builder migrate(boolean migrate) {
            this.migrate = migrate;
            return this;
        }

        /** Pool size (default {@value RiffleConfig#DEFAULT_POOL_SIZE}). */
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

        /** Concurrent completion flushes (default {@value RiffleConfig#DEFAULT_COMPLETION_FLUSH_CONCURRENCY}). */
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

        /** Adds or replaces a queue's settings. */
        public Builder queue(QueueConfig queue) {
            this.queues.put(queue.name(), queue);
            return this;
        }

        /** Micrometer registry to publish metrics to (default none). */
        public Builder meterRegistry(@Nullable Object meterRegistry) {
            this.meterRegistry = meterRegistry;
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
            if (url == null) {
                throw new IllegalArgumentException("url is required");
            }
            return new RiffleConfig(url, schema, migrate, poolSize, applicationName, maxClaimBatch,
                    completionBatchSize, completionWindow, completionFlushConcurrency, pollInterval,
                    safetyPollInterval, busyRetryDelay, claimLinger, cursorAdvanceDelay, maxArgsBytes,
                    workPendingOutcomes, workPrefetch, claimConcurrency, queues, dlqByDefault,
                    maintenance, meterRegistry, clock, scheduler);
        }
    }
}
