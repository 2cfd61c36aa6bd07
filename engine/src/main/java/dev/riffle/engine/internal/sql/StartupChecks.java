package dev.riffle.engine.internal.sql;

import dev.riffle.engine.api.SchemaNotReadyException;
import dev.riffle.engine.api.QueueConfig;
import java.util.Collection;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * What an engine checks and records before it serves anything: the schema's function contract
 * ({@link SchemaContract}), the upgrade guard, and each queue's explicit DLQ policy, enqueue shard count, retry backoff, limits and priority aging.
 */
public final class StartupChecks {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine");

    private StartupChecks() {}

    /**
     * Runs the checks in order; errors with {@link SchemaNotReadyException} when the schema cannot be served, having
     * changed nothing. The explicit settings of {@code queues} (DLQ policy, enqueue shards, backoff) are recorded last.
     */
    public static Mono<Void> run(Db db, String schema, Collection<QueueConfig> queues) {
        return SchemaContract.check(db, schema)
                .then(Mono.defer(() -> upgradeGuard(db, schema)))
                .then(Mono.defer(() -> recordQueuePolicies(db, List.copyOf(queues))));
    }

    /**
     * Destructive steps never run silently over live data (docs/design/maintenance.md, startup guard): a legacy
     * {@code open_receipt_claims} frontier table is dropped when empty, and startup is refused while it holds rows.
     */
    private static Mono<Void> upgradeGuard(Db db, String schema) {
        return db.query("upgrade_guard", st -> {}, row -> row.get("legacy_rows", Long.class)).single()
                .flatMap(rows -> {
                    if (rows > 0) {
                        return Mono.error(new SchemaNotReadyException("schema '" + schema + "' still has a legacy "
                                + "open_receipt_claims table holding " + rows + " rows; drain those claims (or migrate them "
                                + "deliberately) before starting this version; nothing was changed"));
                    }
                    if (rows == 0) {
                        log.warn("dropped the empty legacy table {}.open_receipt_claims", schema);
                    }
                    return Mono.empty();
                });
    }

    /**
     * Records each queue's explicit DLQ policy, enqueue shard count and retry backoff in {@code queue_meta}, the one place every
     * exit path and every enqueue reads them (docs/design/delivery-contract.md). Engines configuring the same queue
     * differently overwrite each other: the last one to start wins, for every engine alike.
     */
    private static Mono<Void> recordQueuePolicies(Db db, List<QueueConfig> queues) {
        return Flux.fromIterable(queues)
                .concatMap(q -> {
                    Mono<Void> dlq = q.dlq() == null ? Mono.empty()
                            : db.query("queue_dlq_policy", st -> st.bind("$1", q.name()).bind("$2", q.dlq()),
                                    row -> 1).then();
                    Mono<Void> shards = q.enqueueShards() == null ? Mono.empty()
                            : db.query("queue_enqueue_shards", st -> st.bind("$1", q.name())
                                    .bind("$2", q.enqueueShards().shortValue()), row -> 1).then();
                    Mono<Void> backoff = q.backoff() == null ? Mono.empty()
                            : db.query("queue_backoff", st -> st.bind("$1", q.name())
                                    .bind("$2", q.backoff().base().toMillis()).bind("$3", q.backoff().cap().toMillis())
                                    .bind("$4", q.backoff().jitter()), row -> 1).then();
                    Mono<Void> concurrency = q.concurrencyLimit() == null ? Mono.empty()
                            : db.query("queue_concurrency_limit", st -> {
                                st.bind("$1", q.name());
                                if (q.concurrencyLimit() == 0) {
                                    st.bindNull("$2", Integer.class);
                                } else {
                                    st.bind("$2", q.concurrencyLimit());
                                }
                            }, row -> 1).then();
                    Mono<Void> rate = q.rateLimit() == null ? Mono.empty()
                            : db.query("queue_rate_limit", st -> {
                                st.bind("$1", q.name());
                                if (q.rateLimit().isNone()) {
                                    st.bindNull("$2", Integer.class).bindNull("$3", Long.class)
                                            .bindNull("$4", Integer.class);
                                } else {
                                    st.bind("$2", q.rateLimit().jobs()).bind("$3", q.rateLimit().period().toMillis())
                                            .bind("$4", q.rateLimit().burst());
                                }
                            }, row -> 1).then();
                    Mono<Void> aging = q.priorityAging() == null ? Mono.empty()
                            : db.query("queue_priority_aging", st -> {
                                st.bind("$1", q.name());
                                if (q.priorityAging().isZero()) {
                                    st.bindNull("$2", Long.class);
                                } else {
                                    st.bind("$2", q.priorityAging().toMillis());
                                }
                            }, row -> 1).then();
                    return dlq.then(shards).then(backoff).then(concurrency).then(rate).then(aging);
                }, 1)
                .then();
    }
}
