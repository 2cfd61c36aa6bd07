package dev.riffle.engine;

import dev.riffle.engine.internal.maintenance.DlqRetention;
import dev.riffle.engine.internal.maintenance.Leadership;
import dev.riffle.engine.internal.maintenance.MaintenanceLoop;
import dev.riffle.engine.internal.maintenance.Promoter;
import dev.riffle.engine.internal.sql.Db;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import java.util.ArrayList;
import java.util.List;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The maintenance side of an engine: leader election plus the leader's loops. Every service can also be run
 * directly with its {@code ...Now()} method, which does one pass regardless of leadership (each pass is safe to
 * run concurrently with a leader's), so tests and operators can drive maintenance deterministically.
 */
public final class Maintenance {

    private final MaintenanceConfig config;
    private final Promoter promoter;
    private final DlqRetention dlqRetention;
    private final Leadership leadership;
    private final List<Disposable> loops = new ArrayList<>();

    Maintenance(MaintenanceConfig config, Db db, PostgresqlConnectionFactory direct, String schema) {
        this.config = config;
        this.promoter = new Promoter(db, config.promotionBatch(), config.promotionMaxBatches());
        this.dlqRetention = new DlqRetention(db, config.dlqRetention(), config.dlqCleanupBatch());
        this.leadership = config.enabled()
                ? new Leadership(direct, db.sql(), config.leaderRetry(), config.leaderPing(), config.scheduler(), schema)
                : null;
        if (leadership != null) {
            loops.add(MaintenanceLoop.start("promotion", config.promotionInterval(), config.scheduler(),
                    leadership::isLeader, promoter::runOnce));
            loops.add(MaintenanceLoop.start("dlq-retention", config.dlqCleanupInterval(), config.scheduler(),
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

    /** One DLQ retention pass; emits the number of entries deleted. */
    public Mono<Long> cleanupDlqNow() {
        return dlqRetention.runOnce();
    }

    Mono<Void> close() {
        return Mono.defer(() -> {
            loops.forEach(Disposable::dispose);
            return leadership == null ? Mono.empty() : leadership.close();
        });
    }
}
