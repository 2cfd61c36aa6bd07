package dev.riffle.engine;

import java.time.Duration;

/**
 * Settings of the maintenance leader's loops (docs/design/maintenance.md). One engine per schema holds the leader
 * advisory lock and runs them; every step is idempotent and safe if two leaders briefly overlap. Build with
 * {@link #builder()}; defaults are named constants.
 *
 * <p>Rotation and its prune are paced by the database (docs/design/rings-and-proofs.md#cadence): the loop offers a
 * rotation every {@code rotationInterval}, and {@code rotate_ring} takes it only when the current slot is due. A
 * rotation or prune asked for by hand ({@link Maintenance#rotateNow}, {@link Maintenance#pruneNow}) ignores the
 * cadence; {@code pruneNow} keeps the history floor.
 *
 * @param enabled run maintenance in this process (default true); disable for producer-only processes or tests
 *                that drive {@code runOnce()} themselves
 * @param leaderRetry how often a follower tries to become leader
 * @param leaderPing how often the leader checks its connection
 * @param promotionInterval promotion tick
 * @param promotionBatch rows promoted per statement
 * @param promotionMaxBatches statements per tick while batches come back full
 * @param rotationInterval how often the ring loop asks each ring whether rotation is due (and, when it is and the
 *                         slot it needs is not free yet, prunes that slot first)
 * @param pruneLockTimeout transaction-local lock_timeout for prune's ACCESS EXCLUSIVE
 * @param rescueInterval stale and deadline rescue tick
 * @param staleAfter an open attempt with no heartbeat evidence newer than this is presumed dead (database clock)
 * @param rescueBudget attempts closed per rescue tick at most
 * @param rescueWindow claims a rescue cursor visits per slot per tick at most
 * @param heartbeatInterval how often a worker records heartbeat evidence for attempts running longer than this
 * @param dlqRetention DLQ entries older than this are deleted
 * @param dlqCleanupInterval DLQ retention tick
 * @param dlqCleanupBatch rows deleted per DLQ retention pass
 * @param failedRetention failed terminal rows younger than this are carried forward when their queue slot is pruned
 * @param rotationMinInterval a ring's slot stays current at least this long, whatever it holds: the loop never
 *                            rotates a ring more often (and so never prunes more often) than this
 * @param rotationMaxAge the queue and lease rings rotate once their current slot has been current this long (database
 *                       clock)
 * @param rotationMaxRows a ring rotates (after {@code rotationMinInterval}) once its current slot holds more than this
 *                        many rows, estimated from the live-tuple statistics of its children (no count)
 * @param claimRotationMaxAge the claim ring rotates once its current slot has been current this long. Shorter than
 *                            {@code rotationMaxAge} on purpose: the stale sweep reads every claim older than
 *                            {@code staleAfter} still in the ring, closed or not, so claim slots should be pruned
 *                            before their claims get that old (claim slots × this below {@code staleAfter})
 * @param historyRetention terminal history (completed, cancelled; failed beyond {@code failedRetention}) stays readable
 *                         in {@code terminal_jobs} at least this long: prune does not truncate a queue slot holding
 *                         younger terminal rows. {@link Duration#ZERO} turns the floor off. When the floor holds the
 *                         slot rotation needs, the ring waits and its current slot grows past
 *                         {@code rotationMaxRows}; open work is never truncated either way
 * @param cronInterval how often the leader evaluates cron schedules (docs/cron.md): a fire is enqueued within about
 *                     this much of its time
 *
 * <p>The loops run on the engine's scheduler and clock ({@link RiffleConfig#scheduler()}, {@link RiffleConfig#clock()}).
 */
public record MaintenanceConfig(boolean enabled, Duration leaderRetry, Duration leaderPing, Duration promotionInterval,
                                int promotionBatch, int promotionMaxBatches, Duration rotationInterval,
                                Duration pruneLockTimeout, Duration rescueInterval, Duration staleAfter,
                                int rescueBudget, int rescueWindow, Duration heartbeatInterval, Duration dlqRetention,
                                Duration dlqCleanupInterval, int dlqCleanupBatch, Duration failedRetention,
                                Duration rotationMinInterval, Duration rotationMaxAge, long rotationMaxRows,
                                Duration historyRetention, Duration claimRotationMaxAge, Duration cronInterval) {

    /** Default follower retry: 5 s. */
    public static final Duration DEFAULT_LEADER_RETRY = Duration.ofSeconds(5);
    /** Default leader ping: 10 s. */
    public static final Duration DEFAULT_LEADER_PING = Duration.ofSeconds(10);
    /** Default promotion tick: 250 ms. */
    public static final Duration DEFAULT_PROMOTION_INTERVAL = Duration.ofMillis(250);
    /** Default promotion batch: {@value}. */
    public static final int DEFAULT_PROMOTION_BATCH = 4096;
    /** Default promotion batches per tick: {@value}. */
    public static final int DEFAULT_PROMOTION_MAX_BATCHES = 32;
    /** Default tick of the ring loop (how often it asks whether rotation is due): 1 s. */
    public static final Duration DEFAULT_ROTATION_INTERVAL = Duration.ofSeconds(1);
    /** Default shortest time a slot stays current: 5 s. */
    public static final Duration DEFAULT_ROTATION_MIN_INTERVAL = Duration.ofSeconds(5);
    /**
     * Default age at which a slot is left: 30 s. With the default 16 queue slots, 15 sealed slots of 30 s hold
     * 7.5 minutes, more than {@link #DEFAULT_HISTORY_RETENTION}, so at low load age alone sets the pace.
     */
    public static final Duration DEFAULT_ROTATION_MAX_AGE = Duration.ofSeconds(30);
    /**
     * Default age at which a claim-ring slot is left: 10 s. With the default 8 claim slots a closed claim is pruned
     * within about 80 s, before it is older than {@link #DEFAULT_STALE_AFTER} and would be read by every stale sweep.
     */
    public static final Duration DEFAULT_CLAIM_ROTATION_MAX_AGE = Duration.ofSeconds(10);
    /** Default estimated rows after which a slot is left: {@value}. */
    public static final long DEFAULT_ROTATION_MAX_ROWS = 100_000;
    /** Default floor for readable terminal history: 5 minutes. */
    public static final Duration DEFAULT_HISTORY_RETENTION = Duration.ofMinutes(5);
    /** Default prune lock timeout: 10 ms. */
    public static final Duration DEFAULT_PRUNE_LOCK_TIMEOUT = Duration.ofMillis(10);
    /** Default rescue tick: 5 s. */
    public static final Duration DEFAULT_RESCUE_INTERVAL = Duration.ofSeconds(5);
    /** Default staleness: 90 s. */
    public static final Duration DEFAULT_STALE_AFTER = Duration.ofSeconds(90);
    /** Default rescue budget: {@value}. */
    public static final int DEFAULT_RESCUE_BUDGET = 500;
    /** Default rescue window: {@value}. */
    public static final int DEFAULT_RESCUE_WINDOW = 10_000;
    /** Default heartbeat interval: 30 s. */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(30);
    /** Default DLQ retention: 30 days. */
    public static final Duration DEFAULT_DLQ_RETENTION = Duration.ofDays(30);
    /** Default DLQ cleanup tick: 60 s. */
    public static final Duration DEFAULT_DLQ_CLEANUP_INTERVAL = Duration.ofSeconds(60);
    /** Default DLQ cleanup batch: {@value}. */
    public static final int DEFAULT_DLQ_CLEANUP_BATCH = 1000;

    /** Default cron evaluation tick: 1 s (the finest cron field is the second). */
    public static final Duration DEFAULT_CRON_INTERVAL = Duration.ofSeconds(1);

    /** Default failed-history retention floor: 72 h. */
    public static final Duration DEFAULT_FAILED_RETENTION = Duration.ofHours(72);

    /** Validates. */
    public MaintenanceConfig {
        positive("failedRetention", failedRetention);
        positive("leaderRetry", leaderRetry);
        positive("leaderPing", leaderPing);
        positive("promotionInterval", promotionInterval);
        positive("rotationInterval", rotationInterval);
        positive("pruneLockTimeout", pruneLockTimeout);
        positive("rescueInterval", rescueInterval);
        positive("staleAfter", staleAfter);
        positive("heartbeatInterval", heartbeatInterval);
        positive("dlqRetention", dlqRetention);
        positive("dlqCleanupInterval", dlqCleanupInterval);
        range("promotionBatch", promotionBatch, 1, 100_000);
        range("promotionMaxBatches", promotionMaxBatches, 1, 1000);
        range("rescueBudget", rescueBudget, 1, 100_000);
        range("rescueWindow", rescueWindow, 1, 1_000_000);
        range("dlqCleanupBatch", dlqCleanupBatch, 1, 100_000);
        positive("rotationMinInterval", rotationMinInterval);
        positive("rotationMaxAge", rotationMaxAge);
        positive("claimRotationMaxAge", claimRotationMaxAge);
        positive("cronInterval", cronInterval);
        if (rotationMaxRows < 1) {
            throw new IllegalArgumentException("rotationMaxRows must be at least 1, got " + rotationMaxRows);
        }
        if (rotationMinInterval.compareTo(rotationMaxAge) > 0) {
            throw new IllegalArgumentException("rotationMinInterval (" + rotationMinInterval + ") must not exceed "
                    + "rotationMaxAge (" + rotationMaxAge + "): a slot cannot have to stay current longer than the age "
                    + "at which it must be left");
        }
        if (rotationMinInterval.compareTo(claimRotationMaxAge) > 0) {
            throw new IllegalArgumentException("rotationMinInterval (" + rotationMinInterval + ") must not exceed "
                    + "claimRotationMaxAge (" + claimRotationMaxAge + "): a slot cannot have to stay current longer than "
                    + "the age at which it must be left");
        }
        if (historyRetention == null || historyRetention.isNegative()) {
            throw new IllegalArgumentException("historyRetention must be zero (no floor) or a positive duration, got "
                    + historyRetention);
        }
        if (staleAfter.compareTo(heartbeatInterval.multipliedBy(3)) < 0) {
            throw new IllegalArgumentException("staleAfter (" + staleAfter + ") must be at least 3 x heartbeatInterval ("
                    + heartbeatInterval + "): a GC pause or a busy event loop must not make a live worker look dead");
        }
    }

    private static void positive(String field, Duration d) {
        if (d == null || d.isZero() || d.isNegative()) {
            throw new IllegalArgumentException(field + " must be a positive duration, got " + d);
        }
    }

    private static void range(String field, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", got " + v);
        }
    }

    /** Defaults. */
    public static MaintenanceConfig defaults() {
        return builder().build();
    }

    /** A builder with every default set. */
    public static Builder builder() {
        return new Builder();
    }

    /** Mutable builder. */
    public static final class Builder {
        private boolean enabled = true;
        private Duration leaderRetry = DEFAULT_LEADER_RETRY;
        private Duration leaderPing = DEFAULT_LEADER_PING;
        private Duration promotionInterval = DEFAULT_PROMOTION_INTERVAL;
        private int promotionBatch = DEFAULT_PROMOTION_BATCH;
        private int promotionMaxBatches = DEFAULT_PROMOTION_MAX_BATCHES;
        private Duration rotationInterval = DEFAULT_ROTATION_INTERVAL;
        private Duration pruneLockTimeout = DEFAULT_PRUNE_LOCK_TIMEOUT;
        private Duration rescueInterval = DEFAULT_RESCUE_INTERVAL;
        private Duration staleAfter = DEFAULT_STALE_AFTER;
        private int rescueBudget = DEFAULT_RESCUE_BUDGET;
        private int rescueWindow = DEFAULT_RESCUE_WINDOW;
        private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
        private Duration dlqRetention = DEFAULT_DLQ_RETENTION;
        private Duration dlqCleanupInterval = DEFAULT_DLQ_CLEANUP_INTERVAL;
        private int dlqCleanupBatch = DEFAULT_DLQ_CLEANUP_BATCH;
        private Duration failedRetention = DEFAULT_FAILED_RETENTION;
        private Duration rotationMinInterval = DEFAULT_ROTATION_MIN_INTERVAL;
        private Duration rotationMaxAge = DEFAULT_ROTATION_MAX_AGE;
        private long rotationMaxRows = DEFAULT_ROTATION_MAX_ROWS;
        private Duration historyRetention = DEFAULT_HISTORY_RETENTION;
        private Duration claimRotationMaxAge = DEFAULT_CLAIM_ROTATION_MAX_AGE;
        private Duration cronInterval = DEFAULT_CRON_INTERVAL;

        private Builder() {}

        /** Run maintenance here (default true). */
        public Builder enabled(boolean v) { this.enabled = v; return this; }
        /** Follower retry (default 5 s). */
        public Builder leaderRetry(Duration v) { this.leaderRetry = v; return this; }
        /** Leader ping (default 10 s). */
        public Builder leaderPing(Duration v) { this.leaderPing = v; return this; }
        /** Promotion tick (default 250 ms). */
        public Builder promotionInterval(Duration v) { this.promotionInterval = v; return this; }
        /** Promotion batch (default 4096). */
        public Builder promotionBatch(int v) { this.promotionBatch = v; return this; }
        /** Promotion batches per tick (default 32). */
        public Builder promotionMaxBatches(int v) { this.promotionMaxBatches = v; return this; }
        /** Tick of the ring loop: how often it asks whether rotation is due (default 1 s). */
        public Builder rotationInterval(Duration v) { this.rotationInterval = v; return this; }
        /** Shortest time a slot stays current (default 5 s; at most {@code rotationMaxAge}). */
        public Builder rotationMinInterval(Duration v) { this.rotationMinInterval = v; return this; }
        /** Age at which a queue- or lease-ring slot is left (default 30 s). */
        public Builder rotationMaxAge(Duration v) { this.rotationMaxAge = v; return this; }
        /** Age at which a claim-ring slot is left (default 10 s; claim slots × this below {@code staleAfter}). */
        public Builder claimRotationMaxAge(Duration v) { this.claimRotationMaxAge = v; return this; }
        /** Estimated rows after which a slot is left, once it is {@code rotationMinInterval} old (default 100,000). */
        public Builder rotationMaxRows(long v) { this.rotationMaxRows = v; return this; }
        /** Floor for readable terminal history (default 5 minutes; {@link Duration#ZERO} for none). */
        public Builder historyRetention(Duration v) { this.historyRetention = v; return this; }
        /** Prune lock timeout (default 10 ms). */
        public Builder pruneLockTimeout(Duration v) { this.pruneLockTimeout = v; return this; }
        /** Rescue tick (default 5 s). */
        public Builder rescueInterval(Duration v) { this.rescueInterval = v; return this; }
        /** Staleness cutoff (default 90 s; at least 3 x heartbeat interval). */
        public Builder staleAfter(Duration v) { this.staleAfter = v; return this; }
        /** Rescue budget per tick (default 500). */
        public Builder rescueBudget(int v) { this.rescueBudget = v; return this; }
        /** Rescue cursor window per slot (default 10,000). */
        public Builder rescueWindow(int v) { this.rescueWindow = v; return this; }
        /** Heartbeat interval (default 30 s). */
        public Builder heartbeatInterval(Duration v) { this.heartbeatInterval = v; return this; }
        /** DLQ retention (default 30 days). */
        public Builder dlqRetention(Duration v) { this.dlqRetention = v; return this; }
        /** DLQ cleanup tick (default 60 s). */
        public Builder dlqCleanupInterval(Duration v) { this.dlqCleanupInterval = v; return this; }
        /** DLQ cleanup batch (default 1000). */
        public Builder dlqCleanupBatch(int v) { this.dlqCleanupBatch = v; return this; }
        /** Failed-history retention floor (default 72 h). */
        public Builder failedRetention(Duration v) { this.failedRetention = v; return this; }

        /** Cron schedule evaluation tick (default 1 s). */
        public Builder cronInterval(Duration v) { this.cronInterval = v; return this; }

        /** Validates and builds. */
        public MaintenanceConfig build() {
            return new MaintenanceConfig(enabled, leaderRetry, leaderPing, promotionInterval, promotionBatch,
                    promotionMaxBatches, rotationInterval, pruneLockTimeout, rescueInterval, staleAfter, rescueBudget,
                    rescueWindow, heartbeatInterval, dlqRetention, dlqCleanupInterval, dlqCleanupBatch, failedRetention,
                    rotationMinInterval, rotationMaxAge, rotationMaxRows, historyRetention, claimRotationMaxAge,
                    cronInterval);
        }
    }
}
