package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The cached gauges: per queue this engine has seen (available, running, deferred, DLQ depth, oldest available age)
 * from ONE statement over all those queues, and dead tuples per table of the schema from the statistics views. A
 * scrape reads the cache; the database is asked once per {@code every}, on the engine's scheduler, and only while a
 * registry is bound. A failed refresh keeps the last values and is retried at the next tick.
 */
public final class QueueGauges {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.metrics");

    private final Db db;
    private final Recorder recorder;
    private final String schema;
    private final Set<String> queues = ConcurrentHashMap.newKeySet();
    private final Disposable loop;

    /** Starts refreshing every {@code every} when {@code recorder} is enabled and {@code every} is positive. */
    public QueueGauges(Db db, Recorder recorder, String schema, Duration every, Scheduler scheduler) {
        this.db = db;
        this.recorder = recorder;
        this.schema = schema;
        this.loop = !recorder.enabled() || every.isZero()
                ? Disposables.disposed()
                : Flux.interval(every, every, scheduler)
                        .onBackpressureDrop()
                        .concatMap(t -> refresh().onErrorResume(e -> {
                            log.debug("meter refresh failed (kept the last values): {}", e.toString());
                            return Mono.empty();
                        }), 0)
                        .subscribe();
    }

    /** Queues to report (those this engine subscribed to), at most {@link RiffleMeter#MAX_TAG_VALUES}. */
    public void see(String... names) {
        if (!recorder.enabled()) {
            return;
        }
        for (String q : names) {
            if (queues.size() < RiffleMeter.MAX_TAG_VALUES || queues.contains(q)) {
                queues.add(q);
            }
        }
    }

    /** One refresh: one statement for the queues, one for dead tuples. Cold. */
    public Mono<Void> refresh() {
        return Mono.defer(() -> {
            if (!recorder.enabled()) {
                return Mono.empty();
            }
            String[] qs = queues.toArray(String[]::new);
            Mono<Void> perQueue = qs.length == 0 ? Mono.empty()
                    : db.query("meter_queue_gauges", st -> st.bind("$1", qs), row -> {
                        String q = row.get("queue", String.class);
                        recorder.record(RiffleMeter.QUEUE_AVAILABLE, num(row.get("available", Long.class)), q);
                        recorder.record(RiffleMeter.QUEUE_RUNNING, num(row.get("running", Long.class)), q);
                        recorder.record(RiffleMeter.QUEUE_DEFERRED, num(row.get("deferred", Long.class)), q);
                        recorder.record(RiffleMeter.QUEUE_DLQ, num(row.get("dlq", Long.class)), q);
                        Double age = row.get("oldest_age_seconds", Double.class);
                        recorder.record(RiffleMeter.QUEUE_OLDEST_AGE, age == null ? 0 : age, q);
                        return q;
                    }).then();
            Mono<Void> dead = db.query("meter_dead_tuples", st -> st.bind("$1", schema), row -> {
                String table = row.get("table_name", String.class);
                recorder.record(RiffleMeter.DEAD_TUPLES, num(row.get("dead", Long.class)), table);
                return table;
            }).then();
            return perQueue.then(dead);
        });
    }

    private static double num(Long n) {
        return n == null ? 0 : n;
    }

    /** Stops refreshing. */
    public void close() {
        loop.dispose();
    }
}
