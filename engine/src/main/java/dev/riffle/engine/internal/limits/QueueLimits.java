package dev.riffle.engine.internal.limits;

import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.InFlight;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.internal.time.EngineClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * One engine's side of the queue limits (docs/limits.md, docs/adr/0015-queue-limits.md). While the engine has live
 * subscriptions it renews, about every {@link #RENEW_INTERVAL}, one {@code queue_limit_leases} row per limited queue
 * it subscribes to ({@code renew_limit_leases}, R__35_limits.sql), reporting what it holds of each, and reads back its
 * share of each queue's limits: how many running attempts it may hold, and the fraction of the rate its token bucket
 * refills at. Claims of a limited queue then ask for at most what the share leaves ({@link #plan}), reserved until
 * the claim returns ({@link #settle}). The update rate is per engine and limited queue, never per job.
 *
 * <p>A subscription claims nothing before the first renewal that covered its queues has answered ({@link #known}),
 * since until then the engine does not know which of them are limited; when the database does not answer renewals
 * for {@link #STALE_AFTER}, limited queues are not claimed from (the engine's lease may have expired and its share
 * been handed to others).
 */
public final class QueueLimits {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.limits");

    /** How often an engine with a subscription on a limited queue renews its leases. */
    public static final Duration RENEW_INTERVAL = Duration.ofSeconds(1);
    /** How often an engine whose subscribed queues have no limits looks whether one was recorded since. */
    public static final Duration IDLE_RECHECK = Duration.ofSeconds(5);
    /** A lease's time to live past its last renewal. */
    public static final Duration TTL = Duration.ofSeconds(5);
    /** Without a successful renewal for this long, limited queues are not claimed from. */
    public static final Duration STALE_AFTER = TTL.minus(RENEW_INTERVAL);

    /** This engine's share of one limited queue; {@code concurrency} null: no concurrency limit. */
    private record Share(@Nullable Integer concurrency, @Nullable TokenBucket bucket) {}

    /**
     * One claim of a subscription with a limited queue: the queues it may claim from now, aligned with their
     * deadlines, materialization flags and caps (null: unlimited), and what was reserved per queue. Empty queues:
     * claim nothing now; {@code retryNanos} &gt; 0 says when a token is due.
     */
    public record Plan(String[] queues, Integer[] deadlines, Boolean[] materialize, Integer[] caps, int[] reserved,
                       boolean[] tokens, long retryNanos) {}

    // Not UUID.randomUUID(): SecureRandom may read /dev/urandom, a blocking call on the thread that starts the engine.
    private final UUID engineId = new UUID(
            (java.util.concurrent.ThreadLocalRandom.current().nextLong() & ~0xF000L) | 0x4000L,
            (java.util.concurrent.ThreadLocalRandom.current().nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L);
    private final Db db;
    private final InFlight inFlight;
    private final Scheduler scheduler;
    private final EngineClock clock;
    private final Map<String, AtomicInteger> subscribed = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> pending = new ConcurrentHashMap<>();
    private final Map<String, TokenBucket> buckets = new ConcurrentHashMap<>();
    private final Set<String> known = ConcurrentHashMap.newKeySet();
    private final Map<Runnable, Set<String>> wakers = new ConcurrentHashMap<>();
    private volatile Map<String, Share> shares = Map.of();
    private volatile long lastOkNanos;
    private final AtomicBoolean running = new AtomicBoolean();
    private final AtomicBoolean requested = new AtomicBoolean();
    private final Disposable.Swap timer = Disposables.swap();
    private volatile boolean closed;

    /** Creates the engine's limits; {@code inFlight} tells what it holds of each queue. */
    public QueueLimits(Db db, InFlight inFlight, Scheduler scheduler, EngineClock clock) {
        this.db = db;
        this.inFlight = inFlight;
        this.scheduler = scheduler;
        this.clock = clock;
        this.lastOkNanos = clock.nanos();
        inFlight.onEnd(this::ended);
    }

    /** The id this engine's leases carry. */
    public UUID engineId() {
        return engineId;
    }

    /**
     * Registers a subscription on {@code queues}; {@code wake} is run after every renewal and whenever an attempt of a
     * limited queue among them ends. Starts a renewal now. The returned handle unregisters (and releases the leases
     * of queues no other subscription of this engine holds).
     */
    public Disposable register(String[] queues, Runnable wake) {
        Set<String> qs = Set.of(queues);
        for (String q : qs) {
            subscribed.computeIfAbsent(q, k -> new AtomicInteger()).incrementAndGet();
        }
        wakers.put(wake, qs);
        renewNow();
        AtomicBoolean done = new AtomicBoolean();
        return () -> {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            wakers.remove(wake);
            List<String> gone = new ArrayList<>();
            for (String q : qs) {
                AtomicInteger n = subscribed.get(q);
                if (n != null && n.decrementAndGet() <= 0) {
                    subscribed.remove(q, n);
                    gone.add(q);
                }
            }
            if (!gone.isEmpty() && !closed) {
                release(gone).subscribe(v -> {}, e -> log.debug("releasing limit leases of {} failed; they expire: {}",
                        gone, e.toString()));
            }
        };
    }

    /** Whether a renewal covering every one of {@code queues} has answered, so their limits are known. */
    public boolean known(String[] queues) {
        for (String q : queues) {
            if (!known.contains(q)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The claim to make for {@code queues} with room for {@code window} jobs; null when none of them is limited (the
     * plain claim). Reserves each limited queue's cap (and its tokens) until {@link #settle}.
     */
    public @Nullable Plan plan(String[] queues, Integer[] deadlines, Boolean[] materialize, int window) {
        Map<String, Share> sh = shares;
        if (sh.isEmpty()) {
            return null;
        }
        boolean any = false;
        for (String q : queues) {
            if (sh.containsKey(q)) {
                any = true;
                break;
            }
        }
        if (!any) {
            return null;
        }
        long now = clock.nanos();
        boolean stale = now - lastOkNanos > STALE_AFTER.toNanos();
        List<Integer> idx = new ArrayList<>();
        List<Integer> caps = new ArrayList<>();
        List<Boolean> took = new ArrayList<>();
        long retry = Long.MAX_VALUE;
        for (int i = 0; i < queues.length; i++) {
            Share s = sh.get(queues[i]);
            if (s == null) {
                idx.add(i);
                caps.add(null);
                took.add(false);
                continue;
            }
            int cap = stale ? 0 : window;
            if (cap > 0 && s.concurrency() != null) {
                cap = Math.min(cap, s.concurrency() - held(queues[i]));
            }
            boolean tokens = false;
            if (cap > 0 && s.bucket() != null) {
                cap = s.bucket().take(cap, now);
                tokens = true;
                if (cap == 0) {
                    retry = Math.min(retry, s.bucket().nanosUntilToken(now));
                }
            }
            if (cap > 0) {
                pending.computeIfAbsent(queues[i], k -> new AtomicInteger()).addAndGet(cap);
                idx.add(i);
                caps.add(cap);
                took.add(tokens);
            }
        }
        int n = idx.size();
        String[] q = new String[n];
        Integer[] d = new Integer[n];
        Boolean[] m = new Boolean[n];
        Integer[] c = new Integer[n];
        int[] r = new int[n];
        boolean[] t = new boolean[n];
        for (int j = 0; j < n; j++) {
            int i = idx.get(j);
            q[j] = queues[i];
            d[j] = deadlines[i];
            m[j] = materialize[i];
            c[j] = caps.get(j);
            r[j] = c[j] == null ? 0 : c[j];
            t[j] = took.get(j);
        }
        return new Plan(q, d, m, c, r, t, n > 0 || retry == Long.MAX_VALUE ? 0 : Math.max(1, retry));
    }

    /** Ends a planned claim's reservations: unused room and tokens go back. */
    public void settle(Plan plan, List<ClaimedJob> claimed) {
        long now = clock.nanos();
        for (int j = 0; j < plan.queues().length; j++) {
            if (plan.reserved()[j] == 0) {
                continue;
            }
            String q = plan.queues()[j];
            pending.get(q).addAndGet(-plan.reserved()[j]);
            if (plan.tokens()[j]) {
                int used = 0;
                for (ClaimedJob job : claimed) {
                    if (job.queue().equals(q)) {
                        used++;
                    }
                }
                TokenBucket b = buckets.get(q);
                if (b != null) {
                    b.giveBack(plan.reserved()[j] - used, now);
                }
            }
        }
    }

    /** What this engine holds of {@code queue}: attempts not finished plus claims in flight. */
    private int held(String queue) {
        AtomicInteger p = pending.get(queue);
        return inFlight.held(queue) + (p == null ? 0 : p.get());
    }

    private void ended(String queue) {
        if (shares.containsKey(queue)) {
            wakers.forEach((wake, qs) -> {
                if (qs.contains(queue)) {
                    wake.run();
                }
            });
        }
    }

    /** Renews now (or right after the renewal in flight). */
    public void renewNow() {
        requested.set(true);
        tryRenew();
    }

    private void tryRenew() {
        if (closed || !requested.get() || !running.compareAndSet(false, true)) {
            return;
        }
        requested.set(false);
        String[] qs = subscribed.keySet().toArray(String[]::new);
        if (qs.length == 0) {
            running.set(false);
            return;
        }
        Integer[] helds = new Integer[qs.length];
        for (int i = 0; i < qs.length; i++) {
            helds[i] = held(qs[i]);
        }
        db.query("renew_limit_leases", st -> st.bind("$1", engineId).bind("$2", qs).bind("$3", helds)
                        .bind("$4", (int) TTL.toMillis()), row -> row)
                .map(this::readRow)
                .collectList()
                .subscribe(rows -> renewed(qs, rows), e -> {
                    log.debug("renewing limit leases of {} failed, retrying: {}", List.of(qs), e.toString());
                    finishRenewal(RENEW_INTERVAL);
                });
    }

    private record Row(String queue, @Nullable Integer concurrencyShare, @Nullable Integer rateJobs,
                       @Nullable Long ratePeriodMs, @Nullable Integer rateBurst, @Nullable Double rateFraction,
                       int liveEngines) {}

    private Row readRow(io.r2dbc.spi.Readable row) {
        return new Row(row.get("queue", String.class), row.get("concurrency_share", Integer.class),
                row.get("rate_jobs", Integer.class), row.get("rate_period_ms", Long.class),
                row.get("rate_burst", Integer.class), row.get("rate_fraction", Double.class),
                java.util.Objects.requireNonNullElse(row.get("live_engines", Integer.class), 1));
    }

    private void renewed(String[] qs, List<Row> rows) {
        long now = clock.nanos();
        Map<String, Share> next = new HashMap<>();
        for (Row r : rows) {
            TokenBucket bucket = null;
            if (r.rateJobs() != null && r.ratePeriodMs() != null && r.rateBurst() != null && r.rateFraction() != null) {
                bucket = buckets.computeIfAbsent(r.queue(), k -> new TokenBucket(now));
                double fraction = r.rateFraction();
                double rate = r.rateJobs() * fraction / (r.ratePeriodMs() * 1_000_000.0);
                double capacity = fraction <= 0 ? 0 : Math.max(1.0, r.rateBurst() * fraction);
                // A bucket starts full only on an engine alone on the queue: one joining others starts empty, so the
                // engines' buckets never hold more than the burst between them.
                bucket.configure(rate, capacity, now, r.liveEngines() == 1);
            }
            next.put(r.queue(), new Share(r.concurrencyShare(), bucket));
        }
        shares = Map.copyOf(next);
        lastOkNanos = now;
        known.addAll(List.of(qs));
        wakers.keySet().forEach(Runnable::run);
        finishRenewal(next.isEmpty() ? IDLE_RECHECK : RENEW_INTERVAL);
    }

    private void finishRenewal(Duration nextIn) {
        running.set(false);
        if (!closed && !subscribed.isEmpty()) {
            timer.update(scheduler.schedule(this::renewNow, nextIn.toNanos(), TimeUnit.NANOSECONDS));
        }
        tryRenew();
    }

    private Mono<Void> release(List<String> queues) {
        return db.query("release_limit_leases", st -> st.bind("$1", engineId).bind("$2", queues.toArray(String[]::new)),
                row -> 1).then();
    }

    /** Stops renewing and releases every lease this engine may hold (engine close). */
    public Mono<Void> close() {
        return Mono.defer(() -> {
            closed = true;
            timer.dispose();
            List<String> all = new ArrayList<>(known);
            if (all.isEmpty()) {
                return Mono.empty();
            }
            return release(all).onErrorResume(e -> {
                log.debug("releasing limit leases at close failed; they expire: {}", e.toString());
                return Mono.empty();
            });
        });
    }
}
