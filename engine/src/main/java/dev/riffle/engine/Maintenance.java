package dev.riffle.engine;

import dev.riffle.engine.api.CronFire;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RingStatus;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.internal.admin.DlqRetention;
import dev.riffle.engine.internal.cron.CronSchedules;
import dev.riffle.engine.internal.leader.Leadership;
import dev.riffle.engine.internal.leader.MaintenanceLoop;
import dev.riffle.engine.internal.promote.Promoter;
import dev.riffle.engine.internal.ring.RingMaintainer;
import dev.riffle.engine.internal.rescue.Rescuer;
import dev.riffle.engine.internal.sql.Db;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The maintenance side of an engine: leader election plus the leader's loops (promotion, rotation and prune of the
 * three rings, stale and deadline rescue, cron schedules, DLQ retention). Every service can also be run directly with its
 * {@code ...Now()} method, which does one pass regardless of leadership: each pass is safe to run concurrently with
 * a leader's, so tests and operators can drive maintenance deterministically.
 */
public final class Maintenance {

    private final MaintenanceConfig config;
    private final Db db;
    private final Promoter promoter;
    private final DlqRetention dlqRetention;
    private final Rescuer rescuer;
    private final CronSchedules cron;
    private final Map<Ring, RingMaintainer> rings = new EnumMap<>(Ring.class);
    private final Leadership leadership;
    private final List<Disposable> loops = new ArrayList<>();

    Maintenance(MaintenanceConfig config, Db db, Mono<PostgresqlConnection> direct, String schema, boolean dlqDefault,
                Scheduler scheduler, Clock clock) {
        this(config, db, direct, schema, dlqDefault, scheduler, clock,
                dev.riffle.engine.internal.metrics.Recorder.NONE);
    }

    Maintenance(MaintenanceConfig config, Db db, Mono<PostgresqlConnection> direct, String schema, boolean dlqDefault,
                Scheduler scheduler, Clock clock, dev.riffle.engine.internal.metrics.Recorder meters) {
        this.config = config;
        this.db = db;
        this.promoter = new Promoter(db, config.promotionBatch(), config.promotionMaxBatches());
        this.dlqRetention = new DlqRetention(db, config.dlqRetention(), config.dlqCleanupBatch());
        this.rescuer = new Rescuer(db, config.staleAfter(), config.rescueBudget(), config.rescueWindow(), dlqDefault);
        this.cron = new CronSchedules(db, clock);
        for (Ring ring : Ring.values()) {
            RingMaintainer.Settings ringSettings = new RingMaintainer.Settings(config.pruneLockTimeout(),
                    config.failedRetention(), config.historyRetention(), config.rotationMinInterval(),
                    ring == Ring.CLAIM ? config.claimRotationMaxAge() : config.rotationMaxAge(), config.rotationMaxRows());
            rings.put(ring, new RingMaintainer(db, ring, ringSettings, clock, meters));
        }
        this.leadership = config.enabled()
                ? new Leadership(direct, db.sql(), config.leaderRetry(), config.leaderPing(), scheduler, schema)
                : null;
        if (leadership != null) {
            loops.add(MaintenanceLoop.start("promotion", config.promotionInterval(), scheduler,
                    leadership::isLeader, promoter::runOnce));
            // One loop for the three rings, one ring after the other: a queue-ring prune reads every claim-ring child
            // in its proofs (receipts referencing the slot), so a claim-ring TRUNCATE running beside it would keep the
            // queue prune waiting while it holds its own slot's ACCESS EXCLUSIVE, and the queue prune's share locks
            // would in turn block the claim prune's lock request. A failing ring does not keep the others from
            // their tick; its error is reported after them.
            loops.add(MaintenanceLoop.start("rings", config.rotationInterval(), scheduler, leadership::isLeader,
                    () -> Flux.fromIterable(rings.values()).concatMapDelayError(RingMaintainer::tick).then()));
            loops.add(MaintenanceLoop.start("rescue", config.rescueInterval(), scheduler, leadership::isLeader,
                    () -> rescuer.rescueLeases().then(rescuer.rescueStale()).then(rescuer.rescueDeadlines())));
            // Every fire goes through cron_fire's compare-and-set, so an overlapping leader cannot enqueue it twice.
            loops.add(MaintenanceLoop.start("cron", config.cronInterval(), scheduler, leadership::isLeader,
                    cron::fireDue));
            loops.add(MaintenanceLoop.start("dlq-retention", config.dlqCleanupInterval(), scheduler,
                    leadership::isLeader, dlqRetention::runOnce));
        }
    }

    /** The settings. */
    public MaintenanceConfig config() {
        return config;
    }

    /** Whether this process is the maintenance leader now. */
    public boolean isLeader() {
        return leadership != null && leadership.isLeader();
    }

    /**
     * Whether some process (this one or another engine on the same schema) holds the maintenance leader lock now:
     * true while promotion, rotation, rescue and DLQ retention run somewhere. Read from {@code pg_locks} on a pooled
     * connection; works with this process's maintenance disabled too. Cold. A health check's "leader known".
     */
    public Mono<Boolean> leaderPresent() {
        if (isLeader()) {
            return Mono.just(true);
        }
        return db.query("leader_present", st -> {}, row -> row.get("present", Boolean.class)).single();
    }

    /** How many times this process became leader. */
    public long leaderTerms() {
        return leadership == null ? 0 : leadership.terms();
    }

    /** Backend pid of the leader connection (fault tests terminate it), or empty when not campaigning. */
    public Mono<Integer> leaderBackendPid() {
        return leadership == null ? Mono.empty() : leadership.backendPid();
    }

    /** One promotion pass; emits the number of jobs moved to the ready ring. */
    public Mono<Integer> promoteNow() {
        return promoter.runOnce();
    }

    /**
     * One cron pass: every schedule not paused enqueues the fires due by the engine's clock since its last fire
     * (the latest one, or up to its {@code catchUp} latest ones); emits the fires this call enqueued. Safe beside a
     * leader's pass and another engine's: each fire is enqueued exactly once (docs/cron.md).
     */
    public Mono<List<CronFire>> fireSchedulesNow() {
        return cron.fireDue();
    }

    /** The stored schedules, for the admin API. */
    CronSchedules cron() {
        return cron;
    }

    /** One DLQ retention pass; emits the number of entries deleted. */
    public Mono<Long> cleanupDlqNow() {
        return dlqRetention.runOnce();
    }

    /**
     * One rotation attempt of {@code ring}, whatever the cadence: it rotates whenever the next slot is free and the
     * ring is not idle. The maintenance loop's rotations are paced ({@code MaintenanceConfig.rotationMaxAge} and
     * friends); this one is for operators and tests.
     */
    public Mono<RotateOutcome> rotateNow(Ring ring) {
        return rings.get(ring).rotateOnce();
    }

    /**
     * One prune attempt of {@code ring} (of the slot rotation needs next), ignoring back-off and cadence. The history
     * retention floor ({@code MaintenanceConfig.historyRetention}) still applies.
     */
    public Mono<PruneOutcome> pruneNow(Ring ring) {
        return rings.get(ring).pruneOnce();
    }

    /** One stale-rescue pass with the configured staleness. */
    public Mono<List<RescuedAttempt>> rescueStaleNow() {
        return rescuer.rescueStale();
    }

    /** One stale-rescue pass with an explicit staleness (database clock). */
    public Mono<List<RescuedAttempt>> rescueStaleNow(Duration staleAfter) {
        return rescuer.rescueStale(staleAfter);
    }

    /** One deadline-rescue pass. */
    public Mono<List<RescuedAttempt>> rescueDeadlinesNow() {
        return rescuer.rescueDeadlines();
    }

    /**
     * One lease-side rescue pass with the configured staleness: materialized attempts whose heartbeat evidence is
     * stale, and parked attempts whose callback timed out.
     */
    public Mono<List<RescuedAttempt>> rescueLeasesNow() {
        return rescuer.rescueLeases();
    }

    /** One lease-side rescue pass with an explicit staleness (database clock). */
    public Mono<List<RescuedAttempt>> rescueLeasesNow(Duration staleAfter) {
        return rescuer.rescueLeases(staleAfter);
    }

    /** Attempts closed by lease-side rescue (stale leases, callback timeouts) in this process since start. */
    public long leaseRescued() {
        return rescuer.leaseRescued();
    }

    /** Attempts closed by stale rescue in this process since start. */
    public long staleRescued() {
        return rescuer.staleRescued();
    }

    /** Attempts closed by deadline rescue in this process since start. */
    public long deadlineRescued() {
        return rescuer.deadlineRescued();
    }

    /** Ring slots truncated by prunes run in this process since start. */
    public long prunedSlots() {
        return rings.values().stream().mapToLong(RingMaintainer::pruned).sum();
    }

    /** Current state of every ring (reads each cursor). */
    public Flux<RingStatus> status() {
        return Flux.fromArray(Ring.values()).concatMap(ring -> {
            RingMaintainer m = rings.get(ring);
            return db.query("ring_status", st -> st.bind("$1", ring.sqlName()),
                            row -> {
                                int slot = row.get("slot", Integer.class);
                                long gen = row.get("generation", Long.class);
                                int n = row.get("slot_count", Integer.class);
                                // Which slots are sealed is ring arithmetic SQL owns (ring_sealed_slots).
                                Integer[] sealed = row.get("sealed_slots", Integer[].class);
                                return new RingStatus(ring, slot, gen, n, List.of(sealed), m.lastRotate(),
                                        m.lastPrune(), m.lastPruneAt(), m.pruned(), m.backoffLevel());
                            })
                    .single();
        }, 1);
    }

    Mono<Void> close() {
        return Mono.defer(() -> {
            loops.forEach(Disposable::dispose);
            return leadership == null ? Mono.empty() : leadership.close();
        });
    }
}
