package dev.riffle.spring.boot;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code riffle.*} settings of the Spring Boot starter (docs/spring-boot.md has the table). Each default is the
 * engine's own ({@link dev.riffle.engine.RiffleConfig}, {@link dev.riffle.engine.MaintenanceConfig}); the starter's
 * tests check that they agree.
 */
@ConfigurationProperties("riffle")
public class RiffleProperties {

    /** Whether to auto-configure a Riffle engine. */
    private boolean enabled = true;

    /** Storage schema of Riffle's tables and functions. */
    private String schema = "riffle";

    /**
     * A database URL of the engine's own (r2dbc:postgresql://, postgresql:// or jdbc:postgresql://, user and password
     * in it or in its query). Unset (the default): the engine uses the application's R2DBC ConnectionFactory bean.
     */
    private @Nullable String url;

    /**
     * Whether to run Riffle's migrations at start. Unset (the default): migrate when dev.riffle:riffle-migrations
     * (and so Flyway) is on the classpath, else expect a migrated schema. True with no riffle-migrations fails at start.
     */
    private @Nullable Boolean migrate;

    /**
     * Connections of the engine's own pool; used with riffle.url, or around an application ConnectionFactory that is
     * not a pool. An application ConnectionPool keeps its own size.
     */
    private int poolSize = 10;

    /** application_name prefix of the connections the engine opens itself. */
    private String applicationName = "riffle";

    /** Largest number of jobs one claim takes. */
    private int maxClaimBatch = 512;

    /** Completions per flush, at most. */
    private int completionBatchSize = 512;

    /** How long the first pending completion waits for others to share its flush. */
    private Duration completionWindow = Duration.ofMillis(1);

    /** Poll interval of an idle subscription while LISTEN is down. */
    private Duration pollInterval = Duration.ofMillis(200);

    /** Poll interval of an idle subscription while LISTEN is up (a missed notification costs at most this). */
    private Duration safetyPollInterval = Duration.ofSeconds(5);

    /** How often the cached gauges (queue depths, dead tuples) are refreshed when a MeterRegistry is bound; 0: never. */
    private Duration meterRefreshInterval = Duration.ofSeconds(10);

    /** Largest accepted args JSON, in UTF-8 bytes. */
    private int maxArgsBytes = 262144;

    /** Batch size from which enqueueMany stages the batch with COPY (docs/bulk-enqueue.md); 0, the default, is off. */
    private int copyEnqueueThreshold = 0;

    /** Whether the workers claim one window of jobs ahead of their running handlers. */
    private boolean workPrefetch = true;

    /** Claims one subscription keeps in flight at once, at most. */
    private int claimConcurrency = 2;

    /** Whether exhausted or failed jobs go to the DLQ when their queue does not say. */
    private boolean dlqByDefault = true;

    /** How long the application start waits for the engine to connect, migrate and check its schema. */
    private Duration startupTimeout = Duration.ofSeconds(60);

    /** Workers: the handler beans, run over riffle.worker.queues. */
    private final Worker worker = new Worker();

    /** Graceful shutdown in Boot's shutdown phase. */
    private final Shutdown shutdown = new Shutdown();

    /** Maintenance leader settings (promotion, ring rotation, rescue, DLQ retention). */
    private final Maintenance maintenance = new Maintenance();

    /** Where Flyway connects (JDBC) when migrating with the application's ConnectionFactory. */
    private final Migration migration = new Migration();

    /** Per-queue settings, by queue name. */
    private final Map<String, Queue> queues = new LinkedHashMap<>();

    /** See {@link #enabled}. */
    public boolean isEnabled() {
        return enabled;
    }

    /** See {@link #enabled}. */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** See {@link #schema}. */
    public String getSchema() {
        return schema;
    }

    /** See {@link #schema}. */
    public void setSchema(String schema) {
        this.schema = schema;
    }

    /** See {@link #url}. */
    public @Nullable String getUrl() {
        return url;
    }

    /** See {@link #url}. */
    public void setUrl(@Nullable String url) {
        this.url = url;
    }

    /** See {@link #migrate}. */
    public @Nullable Boolean getMigrate() {
        return migrate;
    }

    /** See {@link #migrate}. */
    public void setMigrate(@Nullable Boolean migrate) {
        this.migrate = migrate;
    }

    /** See {@link #poolSize}. */
    public int getPoolSize() {
        return poolSize;
    }

    /** See {@link #poolSize}. */
    public void setPoolSize(int poolSize) {
        this.poolSize = poolSize;
    }

    /** See {@link #applicationName}. */
    public String getApplicationName() {
        return applicationName;
    }

    /** See {@link #applicationName}. */
    public void setApplicationName(String applicationName) {
        this.applicationName = applicationName;
    }

    /** See {@link #maxClaimBatch}. */
    public int getMaxClaimBatch() {
        return maxClaimBatch;
    }

    /** See {@link #maxClaimBatch}. */
    public void setMaxClaimBatch(int maxClaimBatch) {
        this.maxClaimBatch = maxClaimBatch;
    }

    /** See {@link #completionBatchSize}. */
    public int getCompletionBatchSize() {
        return completionBatchSize;
    }

    /** See {@link #completionBatchSize}. */
    public void setCompletionBatchSize(int completionBatchSize) {
        this.completionBatchSize = completionBatchSize;
    }

    /** See {@link #completionWindow}. */
    public Duration getCompletionWindow() {
        return completionWindow;
    }

    /** See {@link #completionWindow}. */
    public void setCompletionWindow(Duration completionWindow) {
        this.completionWindow = completionWindow;
    }

    /** See {@link #pollInterval}. */
    public Duration getPollInterval() {
        return pollInterval;
    }

    /** See {@link #pollInterval}. */
    public void setPollInterval(Duration pollInterval) {
        this.pollInterval = pollInterval;
    }

    /** See {@link #safetyPollInterval}. */
    public Duration getSafetyPollInterval() {
        return safetyPollInterval;
    }

    /** See {@link #safetyPollInterval}. */
    public void setSafetyPollInterval(Duration safetyPollInterval) {
        this.safetyPollInterval = safetyPollInterval;
    }

    /** See {@link #meterRefreshInterval}. */
    public Duration getMeterRefreshInterval() {
        return meterRefreshInterval;
    }

    /** See {@link #meterRefreshInterval}. */
    public void setMeterRefreshInterval(Duration meterRefreshInterval) {
        this.meterRefreshInterval = meterRefreshInterval;
    }

    /** See {@link #maxArgsBytes}. */
    public int getMaxArgsBytes() {
        return maxArgsBytes;
    }

    /** See {@link #maxArgsBytes}. */
    public void setMaxArgsBytes(int maxArgsBytes) {
        this.maxArgsBytes = maxArgsBytes;
    }

    /** See {@link #copyEnqueueThreshold}. */
    public int getCopyEnqueueThreshold() {
        return copyEnqueueThreshold;
    }

    /** See {@link #copyEnqueueThreshold}. */
    public void setCopyEnqueueThreshold(int copyEnqueueThreshold) {
        this.copyEnqueueThreshold = copyEnqueueThreshold;
    }

    /** See {@link #workPrefetch}. */
    public boolean isWorkPrefetch() {
        return workPrefetch;
    }

    /** See {@link #workPrefetch}. */
    public void setWorkPrefetch(boolean workPrefetch) {
        this.workPrefetch = workPrefetch;
    }

    /** See {@link #claimConcurrency}. */
    public int getClaimConcurrency() {
        return claimConcurrency;
    }

    /** See {@link #claimConcurrency}. */
    public void setClaimConcurrency(int claimConcurrency) {
        this.claimConcurrency = claimConcurrency;
    }

    /** See {@link #dlqByDefault}. */
    public boolean isDlqByDefault() {
        return dlqByDefault;
    }

    /** See {@link #dlqByDefault}. */
    public void setDlqByDefault(boolean dlqByDefault) {
        this.dlqByDefault = dlqByDefault;
    }

    /** See {@link #startupTimeout}. */
    public Duration getStartupTimeout() {
        return startupTimeout;
    }

    /** See {@link #startupTimeout}. */
    public void setStartupTimeout(Duration startupTimeout) {
        this.startupTimeout = startupTimeout;
    }

    /** See {@link #worker}. */
    public Worker getWorker() {
        return worker;
    }

    /** See {@link #shutdown}. */
    public Shutdown getShutdown() {
        return shutdown;
    }

    /** See {@link #maintenance}. */
    public Maintenance getMaintenance() {
        return maintenance;
    }

    /** See {@link #migration}. */
    public Migration getMigration() {
        return migration;
    }

    /** See {@link #queues}. */
    public Map<String, Queue> getQueues() {
        return queues;
    }

    /** {@code riffle.worker.*}: the workers that run the handler beans. */
    public static class Worker {

        /** Whether to run the handler beans in this application (false: enqueue only). */
        private boolean enabled = true;

        /** Handlers running at once, at most (also the claim demand). */
        private int concurrency = 16;

        /** Queues the workers take jobs from. */
        private List<String> queues = new ArrayList<>(List.of("default"));

        /** See {@link #enabled}. */
        public boolean isEnabled() {
            return enabled;
        }

        /** See {@link #enabled}. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** See {@link #concurrency}. */
        public int getConcurrency() {
            return concurrency;
        }

        /** See {@link #concurrency}. */
        public void setConcurrency(int concurrency) {
            this.concurrency = concurrency;
        }

        /** See {@link #queues}. */
        public List<String> getQueues() {
            return queues;
        }

        /** See {@link #queues}. */
        public void setQueues(List<String> queues) {
            this.queues = queues;
        }
    }

    /** {@code riffle.shutdown.*}. */
    public static class Shutdown {

        /**
         * How long a shutdown lets running handlers finish and record their outcomes before the engine closes;
         * attempts still running then stay open for rescue. Keep it below spring.lifecycle.timeout-per-shutdown-phase.
         */
        private Duration gracePeriod = Duration.ofSeconds(20);

        /** See {@link #gracePeriod}. */
        public Duration getGracePeriod() {
            return gracePeriod;
        }

        /** See {@link #gracePeriod}. */
        public void setGracePeriod(Duration gracePeriod) {
            this.gracePeriod = gracePeriod;
        }
    }

    /** {@code riffle.maintenance.*}. */
    public static class Maintenance {

        /** Whether this application campaigns for maintenance leadership (one process of the schema leads). */
        private boolean enabled = true;

        /** How long completed jobs stay visible in history. */
        private Duration historyRetention = Duration.ofMinutes(5);

        /** How long an attempt may go without a heartbeat before rescue reopens it. */
        private Duration staleAfter = Duration.ofSeconds(90);

        /** How often running attempts are heartbeated. */
        private Duration heartbeatInterval = Duration.ofSeconds(30);

        /** How long DLQ entries are kept. */
        private Duration dlqRetention = Duration.ofDays(30);

        /** See {@link #enabled}. */
        public boolean isEnabled() {
            return enabled;
        }

        /** See {@link #enabled}. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** See {@link #historyRetention}. */
        public Duration getHistoryRetention() {
            return historyRetention;
        }

        /** See {@link #historyRetention}. */
        public void setHistoryRetention(Duration historyRetention) {
            this.historyRetention = historyRetention;
        }

        /** See {@link #staleAfter}. */
        public Duration getStaleAfter() {
            return staleAfter;
        }

        /** See {@link #staleAfter}. */
        public void setStaleAfter(Duration staleAfter) {
            this.staleAfter = staleAfter;
        }

        /** See {@link #heartbeatInterval}. */
        public Duration getHeartbeatInterval() {
            return heartbeatInterval;
        }

        /** See {@link #heartbeatInterval}. */
        public void setHeartbeatInterval(Duration heartbeatInterval) {
            this.heartbeatInterval = heartbeatInterval;
        }

        /** See {@link #dlqRetention}. */
        public Duration getDlqRetention() {
            return dlqRetention;
        }

        /** See {@link #dlqRetention}. */
        public void setDlqRetention(Duration dlqRetention) {
            this.dlqRetention = dlqRetention;
        }
    }

    /** {@code riffle.migration.*}: Flyway's JDBC connection when the engine migrates. */
    public static class Migration {

        /**
         * JDBC (or any Riffle URL form) where Flyway connects. Unset: spring.flyway.url if the application sets it,
         * else the host, port, database and credentials of the application's R2DBC connection (spring.r2dbc.*).
         */
        private @Nullable String url;

        /** User for riffle.migration.url (default: the URL's, or spring.flyway.user). */
        private @Nullable String username;

        /** Password for riffle.migration.url (default: the URL's, or spring.flyway.password). */
        private @Nullable String password;

        /** See {@link #url}. */
        public @Nullable String getUrl() {
            return url;
        }

        /** See {@link #url}. */
        public void setUrl(@Nullable String url) {
            this.url = url;
        }

        /** See {@link #username}. */
        public @Nullable String getUsername() {
            return username;
        }

        /** See {@link #username}. */
        public void setUsername(@Nullable String username) {
            this.username = username;
        }

        /** See {@link #password}. */
        public @Nullable String getPassword() {
            return password;
        }

        /** See {@link #password}. */
        public void setPassword(@Nullable String password) {
            this.password = password;
        }
    }

    /** {@code riffle.queues.<name>.*}: one queue's settings. */
    public static class Queue {

        /** Hard deadline of each attempt (0: none; else 1 s to 7 days). */
        private Duration deadline = Duration.ZERO;

        /** Whether terminal failures go to the DLQ (unset: riffle.dlq-by-default). */
        private @Nullable Boolean dlq;

        /** Whether claims materialize leases (for long-running or callback-waiting attempts). */
        private boolean materializedLeases = false;

        /** Lanes per priority the queue's jobs are spread over, 1 to 64 (unset: keep the schema's count). */
        private @Nullable Integer enqueueShards;

        /** See {@link #deadline}. */
        public Duration getDeadline() {
            return deadline;
        }

        /** See {@link #deadline}. */
        public void setDeadline(Duration deadline) {
            this.deadline = deadline;
        }

        /** See {@link #dlq}. */
        public @Nullable Boolean getDlq() {
            return dlq;
        }

        /** See {@link #dlq}. */
        public void setDlq(@Nullable Boolean dlq) {
            this.dlq = dlq;
        }

        /** See {@link #materializedLeases}. */
        public boolean isMaterializedLeases() {
            return materializedLeases;
        }

        /** See {@link #materializedLeases}. */
        public void setMaterializedLeases(boolean materializedLeases) {
            this.materializedLeases = materializedLeases;
        }

        /** See {@link #enqueueShards}. */
        public @Nullable Integer getEnqueueShards() {
            return enqueueShards;
        }

        /** See {@link #enqueueShards}. */
        public void setEnqueueShards(@Nullable Integer enqueueShards) {
            this.enqueueShards = enqueueShards;
        }
    }
}
