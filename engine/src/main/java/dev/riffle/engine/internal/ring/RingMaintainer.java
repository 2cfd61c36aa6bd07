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
 * Rotation and prune of one ring (docs/design/rings-and-proofs.md). One tick = rotate, then prune the slot rotation
 * needs next. After a prune that was blocked or skipped, the next {@code 2^level} ticks skip prune (level at most 5,
 * reset on success), so a long reader is not hammered with ACCESS EXCLUSIVE requests that would queue other readers.
 */
public final class RingMaintainer {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.maintenance");
    private static final int MAX_BACKOFF_LEVEL = 5;

    /** Result of one tick. */
    public record Tick(RotateOutcome rotate, @Nullable PruneOutcome prune) {}

    private final Db db;
    private final Ring ring;
    private final String lockTimeout;
    private final int failedRetentionSecs;
    private final Clock clock;
    private final AtomicLong pruned = new AtomicLong();
    private volatile @Nullable RotateOutcome lastRotate;
    private volatile @Nullable PruneOutcome lastPrune;
    private volatile @Nullable Instant lastPruneAt;
    private int backoffLevel;
    private int ticksToSkip;

    /** Creates the maintainer. */
    public RingMaintainer(Db db, Ring ring, Duration pruneLockTimeout, Duration failedRetention, Clock clock) {
        this.db = db;
        this.ring = ring;
        this.lockTimeout = Math.max(1, pruneLockTimeout.toMillis()) + "ms";
        this.failedRetentionSecs = (int) Math.min(Integer.MAX_VALUE, failedRetention.toSeconds());
        this.clock = clock;
    }

    /** One rotation attempt. */
    public Mono<RotateOutcome> rotateOnce() {
        return db.query("rotate", st -> st.bind("$1", ring.sqlName()), row -> row.get("outcome", String.class))
                .single().map(RotateOutcome::parse).doOnNext(o -> lastRotate = o);
    }

    /** One prune attempt, ignoring back-off. */
    public Mono<PruneOutcome> pruneOnce() {
        return db.query("prune", st -> st.bind("$1", ring.sqlName()).bind("$2", lockTimeout).bind("$3", failedRetentionSecs),
                        row -> row.get("outcome", String.class))
                .single().map(PruneOutcome::parse)
                .doOnNext(o -> {
                    lastPrune = o;
                    lastPruneAt = clock.instant();
                    if (o == PruneOutcome.PRUNED) {
                        pruned.incrementAndGet();
                    }
                    if (o != PruneOutcome.PRUNED && o != PruneOutcome.NOOP && log.isDebugEnabled()) {
                        log.debug("{} ring prune: {}", ring, o);
                    }
                });
    }

    /** The loop's tick: rotate, then prune unless backing off. */
    public Mono<Tick> tick() {
        return rotateOnce().flatMap(r -> {
            if (ticksToSkip > 0) {
                ticksToSkip--;
                return Mono.just(new Tick(r, null));
            }
            return pruneOnce().map(p -> {
                if (p == PruneOutcome.PRUNED || p == PruneOutcome.NOOP) {
                    backoffLevel = 0;
                } else {
                    backoffLevel = Math.min(MAX_BACKOFF_LEVEL, backoffLevel + 1);
                    ticksToSkip = (1 << backoffLevel) - 1;
                }
                return new Tick(r, p);
            });
        });
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
