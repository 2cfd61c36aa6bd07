package dev.riffle.engine.internal.promote;

import dev.riffle.engine.internal.sql.Db;
import reactor.core.publisher.Mono;

/**
 * Promotion (docs/design/maintenance.md): moves due deferred jobs (scheduled, snoozed, retryable) into the ready ring
 * in bounded batches, oldest first, while batches come back full (at most {@code maxBatches} per run). Each batch is
 * one transaction that deletes and re-appends, so a leader dying mid-batch loses and duplicates nothing.
 *
 * <p>A lane whose reservation lock an open producer transaction holds is skipped by {@code promote_due} rather than
 * waited for, so one idle producer cannot stall promotion of every other lane; its due jobs stay in the backlog and
 * are taken by the first tick after the lane frees. A short batch therefore does not mean nothing else is due: the
 * next tick looks again.
 */
public final class Promoter {
    private final Db db;
    private final int batch;
    private final int maxBatches;

    /** Creates the service. */
    public Promoter(Db db, int batch, int maxBatches) {
        this.db = db;
        this.batch = batch;
        this.maxBatches = maxBatches;
    }

    /** Promotes what is due; emits the number of jobs promoted. */
    public Mono<Integer> runOnce() {
        return step(0, 0);
    }

    private Mono<Integer> step(int done, int batches) {
        return db.query("promote", st -> st.bind("$1", batch), row -> row.get("promoted", Integer.class))
                .next()
                .defaultIfEmpty(0)
                .flatMap(n -> n >= batch && batches + 1 < maxBatches ? step(done + n, batches + 1) : Mono.just(done + n));
    }
}
