package dev.riffle.engine.internal.claim;

import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Post-commit claim cursor advance (docs/design/delivery-contract.md), coalesced: claims report the lanes they consumed
 * and a single flight flushes the highest position per lane after a short window, in one statement. Losing an advance
 * is harmless (the next claim heals the cursor from claim-attempt evidence, ADR 0002); advancing keeps that walk short
 * and lets queue-ring prune see the lane as consumed.
 */
public final class CursorAdvancer {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.claim");

    private record Lane(String queue, int priority, int shard) {}

    private final Db db;
    private final Duration delay;
    private final Scheduler scheduler;
    private final Map<Lane, Long> pending = new ConcurrentHashMap<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private volatile boolean closed;
    private volatile Disposable inFlight = () -> {};

    /** Creates the advancer. */
    public CursorAdvancer(Db db, Duration delay, Scheduler scheduler) {
        this.db = db;
        this.delay = delay;
        this.scheduler = scheduler;
    }

    /** Records that the lane's claimed rows end below {@code next} (the claim has committed). */
    public void advance(String queue, int priority, int shard, long next) {
        pending.merge(new Lane(queue, priority, shard), next, Math::max);
        schedule();
    }

    private void schedule() {
        if (closed || pending.isEmpty() || !scheduled.compareAndSet(false, true)) {
            return;
        }
        inFlight = Mono.delay(delay, scheduler)
                .then(Mono.defer(this::flush))
                .onErrorResume(e -> {
                    log.debug("claim cursor advance failed; the next claim heals the cursor from evidence", e);
                    return Mono.empty();
                })
                .doFinally(s -> {
                    scheduled.set(false);
                    schedule();
                })
                .subscribe();
    }

    private Mono<Void> flush() {
        List<Map.Entry<Lane, Long>> batch = new ArrayList<>();
        for (Map.Entry<Lane, Long> e : pending.entrySet()) {
            // Remove only if no newer position arrived meanwhile; a newer one stays for the next flush.
            if (pending.remove(e.getKey(), e.getValue())) {
                batch.add(e);
            }
        }
        if (batch.isEmpty()) {
            return Mono.empty();
        }
        int n = batch.size();
        String[] queues = new String[n];
        Integer[] prios = new Integer[n];
        Integer[] shards = new Integer[n];
        Long[] nexts = new Long[n];
        for (int i = 0; i < n; i++) {
            Map.Entry<Lane, Long> e = batch.get(i);
            queues[i] = e.getKey().queue();
            prios[i] = e.getKey().priority();
            shards[i] = e.getKey().shard();
            nexts[i] = e.getValue();
        }
        return db.query("advance_cursors",
                        st -> st.bind("$1", queues).bind("$2", prios).bind("$3", shards).bind("$4", nexts),
                        row -> row.get("moved", Integer.class))
                .then();
    }

    /** Stops scheduling and flushes what is pending. */
    public Mono<Void> close() {
        closed = true;
        inFlight.dispose();
        return flush().onErrorResume(e -> Mono.empty());
    }
}
