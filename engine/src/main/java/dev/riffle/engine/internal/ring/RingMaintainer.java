package dev.riffle.engine.internal.ring;

import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.internal.sql.Db;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * Rotation and prune of one ring (docs/design/rings-and-proofs.md). One tick offers the ring a rotation, which the
 * database takes only when the current slot is due ({@code rotate_ring} with the cadence bounds of
 * {@code MaintenanceConfig}: at least {@code rotationMinInterval} old, and either {@code rotationMaxAge} old or holding
 * more than {@code rotationMaxRows} rows). A due rotation that finds the slot it needs still occupied prunes that slot
 * and, if the prune emptied it, rotates in the same tick: prune runs only for the slot rotation needs, and only when it
 * needs it. Which slot is due and which is prunable is decided in SQL, never here.
 *
 * <p>After a prune that was blocked or skipped for a proof, the next {@code 2^level} due ticks skip prune (level at
 * most 5, reset on success), so a long reader is not hammered with ACCESS EXCLUSIVE requests that would queue other
 * readers. A prune held back by the history retention floor ({@link PruneOutcome#SKIPPED_RETENTION}) requested no lock
 * and does not raise the level: the floor is tried again on the next tick.
 */
public final class RingMaintainer {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.maintenance");
    private static final int MAX_BACKOFF_LEVEL = 5;

    /**
     * Result of one tick.
     *
     * @param rotate the last rotation answer of the tick
     * @param prune the prune answer, or null when the tick did not prune
     */
    public record Tick(RotateOutcome rotate, @Nullable PruneOutcome prune) {}

    /**
     * The prune and cadence settings, as {@code MaintenanceConfig} validated them.
     *
     * @param pruneLockTimeout lock_timeout of prune's ACCESS EXCLUSIVE request
     * @param failedRetention failed history younger than this is carried forward at prune
     * @param historyRetention terminal history younger than this keeps its queue slot (zero: no floor)
     * @param minInterval shortest time a slot stays current
     * @param maxAge age at which a slot is left
     * @param maxRows estimated rows after which a slot is left
     */
    public record Settings(Duration pruneLockTimeout, Duration failedRetention, Duration historyRetention,
                           Duration minInterval, Duration maxAge, long maxRows) {}

    private final Db db;
    private final Ring ring;
    private final String lockTimeout;
    private final int failedRetentionSecs;
    private final int historyRetentionSecs;
    private final double minIntervalSecs;
    private final double maxAgeSecs;
    private final long maxRows;
    private final Clock clock;
    private final AtomicLong pruned = new AtomicLong();
    private final dev.riffle.engine.internal.metrics.Recorder meters;
    private volatile @Nullable RotateOutcome lastRotate;
    private volatile @Nullable PruneOutcome lastPrune;
    private volatile @Nullable Instant lastPruneAt;
    private int backoffLevel;
    private int ticksToSkip;

    /** Creates the maintainer of {@code ring}. */
    public RingMaintainer(Db db, Ring ring, Settings settings, Clock clock) {
        this(db, ring, settings, clock, dev.riffle.engine.internal.metrics.Recorder.NONE);
    }

    /** As above, counting rotations and prunes by outcome (RiffleMeter.RING_OPERATIONS) in {@code meters}. */
    public RingMaintainer(Db db, Ring ring, Settings settings, Clock clock,
                          dev.riffle.engine.internal.metrics.Recorder meters) {
        this.meters = meters;
        this.db = db;
        this.ring = ring;
        this.lockTimeout = Math.max(1, settings.pruneLockTimeout().toMillis()) + "ms";
        this.failedRetentionSecs = seconds(settings.failedRetention());
        this.historyRetentionSecs = seconds(settings.historyRetention());
        this.minIntervalSecs = settings.minInterval().toNanos() / 1e9;
        this.maxAgeSecs = settings.maxAge().toNanos() / 1e9;
        this.maxRows = settings.maxRows();
        this.clock = clock;
    }

    private static int seconds(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toSeconds());
    }

    /** One rotation attempt, whatever the cadence (rotation by hand): only the busy and idle gates apply. */
    public Mono<RotateOutcome> rotateOnce() {
        return db.query("rotate", st -> st.bind("$1", ring.sqlName()), row -> row.get("outcome", String.class))
                .single().map(RotateOutcome::parse).doOnNext(this::rotated);
    }

    /** The loop's rotation offer: taken only when the current slot is due ({@link RotateOutcome#SKIPPED_NOT_DUE}). */
    public Mono<RotateOutcome> rotateWhenDue() {
        return db.query("rotate_when_due", st -> st.bind("$1", ring.sqlName()).bind("$2", minIntervalSecs)
                                .bind("$3", maxAgeSecs).bind("$4", maxRows),
                        row -> row.get("outcome", String.class))
                .single().map(RotateOutcome::parse).doOnNext(this::rotated);
    }

    private void rotated(RotateOutcome o) {
        lastRotate = o;
        meters.record(dev.riffle.engine.api.RiffleMeter.RING_OPERATIONS, 1, ring.sqlName(), "rotate",
                o.name().toLowerCase(java.util.Locale.ROOT));
    }

    /** One prune attempt of the slot rotation needs next, ignoring back-off and cadence; keeps the history floor. */
    public Mono<PruneOutcome> pruneOnce() {
        return db.query("prune", st -> st.bind("$1", ring.sqlName()).bind("$2", lockTimeout).bind("$3", failedRetentionSecs)
                                .bind("$4", historyRetentionSecs),
                        row -> row.get("outcome", String.class))
                .single().map(PruneOutcome::parse)
                .doOnNext(o -> {
                    lastPrune = o;
                    meters.record(dev.riffle.engine.api.RiffleMeter.RING_OPERATIONS, 1, ring.sqlName(), "prune",
                            o.name().toLowerCase(java.util.Locale.ROOT));
                    lastPruneAt = clock.instant();
                    if (o == PruneOutcome.PRUNED) {
                        pruned.incrementAndGet();
                    }
                    if (o != PruneOutcome.PRUNED && o != PruneOutcome.NOOP && log.isDebugEnabled()) {
                        log.debug("{} ring prune: {}", ring, o);
                    }
                });
    }

    /**
     * The loop's tick: offer a rotation; when it is due but the slot it needs is occupied, prune that slot (unless
     * backing off) and, if it is free now, offer the rotation again.
     */
    public Mono<Tick> tick() {
        return rotateWhenDue().flatMap(r -> {
            if (r != RotateOutcome.SKIPPED_BUSY) {
                return Mono.just(new Tick(r, null));
            }
            if (ticksToSkip > 0) {
                ticksToSkip--;
                return Mono.just(new Tick(r, null));
            }
            return pruneOnce().flatMap(p -> {
                backOff(p);
                return p == PruneOutcome.PRUNED || p == PruneOutcome.NOOP
                        ? rotateWhenDue().map(again -> new Tick(again, p))
                        : Mono.just(new Tick(r, p));
            });
        });
    }

    private void backOff(PruneOutcome p) {
        if (p == PruneOutcome.PRUNED || p == PruneOutcome.NOOP) {
            backoffLevel = 0;
        } else if (p != PruneOutcome.SKIPPED_RETENTION) {
            backoffLevel = Math.min(MAX_BACKOFF_LEVEL, backoffLevel + 1);
            ticksToSkip = (1 << backoffLevel) - 1;
        }
    }

    /** The ring. */
    public Ring ring() {
        return ring;
    }

    /** Last rotate outcome, or null. */
    public @Nullable RotateOutcome lastRotate() {
        return lastRotate;
    }

    /** Last prune outcome, or null. */
    public @Nullable PruneOutcome lastPrune() {
        return lastPrune;
    }

    /** When the last prune ran, or null. */
    public @Nullable Instant lastPruneAt() {
        return lastPruneAt;
    }

    /** Prunes that truncated a slot. */
    public long pruned() {
        return pruned.get();
    }

    /** Current back-off level. */
    public int backoffLevel() {
        return backoffLevel;
    }
}
