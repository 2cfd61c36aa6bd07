package dev.riffle.engine.internal.rescue;

import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Mono;

/**
 * Rescue (docs/design/delivery-contract.md, Rescue): the receipt-side stale and deadline sweeps over compact and
 * row-local claims, and the lease-side pass over materialized leases (stale heartbeat, callback timeout). Each pass is
 * bounded by a budget of closed attempts (and, for the cursor sweeps, a per-slot window of visited claims). The sweeps
 * live in the database; this class only calls them and counts what they closed. Rescued workers are told to stop
 * through the cancel channel.
 */
public final class Rescuer {

    private final Db db;
    private final Duration staleAfter;
    private final int budget;
    private final int window;
    private final boolean dlq;
    private final AtomicLong staleRescued = new AtomicLong();
    private final AtomicLong deadlineRescued = new AtomicLong();
    private final AtomicLong leaseRescued = new AtomicLong();

    /** Creates the rescuer; {@code dlq} is the default DLQ policy for exhausted rescued attempts. */
    public Rescuer(Db db, Duration staleAfter, int budget, int window, boolean dlq) {
        this.db = db;
        this.staleAfter = staleAfter;
        this.budget = budget;
        this.window = window;
        this.dlq = dlq;
    }

    /** One stale pass with the configured staleness. */
    public Mono<List<RescuedAttempt>> rescueStale() {
        return rescueStale(staleAfter);
    }

    /** One stale pass: attempts with no heartbeat evidence newer than {@code staleAfter} are closed. */
    public Mono<List<RescuedAttempt>> rescueStale(Duration staleAfter) {
        double secs = staleAfter.toNanos() / 1e9;
        return db.query("rescue_stale", st -> st.bind("$1", secs).bind("$2", budget).bind("$3", window).bind("$4", dlq),
                        row -> new RescuedAttempt(row.get("job_id", Long.class), row.get("run_lease", Long.class),
                                row.get("disposition", String.class)))
                .collectList()
                .doOnNext(l -> staleRescued.addAndGet(l.size()));
    }

    /** One deadline pass. */
    public Mono<List<RescuedAttempt>> rescueDeadlines() {
        return db.query("rescue_deadlines", st -> st.bind("$1", budget).bind("$2", window).bind("$3", dlq),
                        row -> new RescuedAttempt(row.get("job_id", Long.class), row.get("run_lease", Long.class),
                                row.get("disposition", String.class)))
                .collectList()
                .doOnNext(l -> deadlineRescued.addAndGet(l.size()));
    }

    /** One lease-side pass with the configured staleness. */
    public Mono<List<RescuedAttempt>> rescueLeases() {
        return rescueLeases(staleAfter);
    }

    /**
     * One lease-side pass: running leases without heartbeat evidence newer than {@code staleAfter}, and parked
     * leases whose callback timed out, are closed and routed to retry (or failure/DLQ when exhausted).
     */
    public Mono<List<RescuedAttempt>> rescueLeases(Duration staleAfter) {
        double secs = staleAfter.toNanos() / 1e9;
        return db.query("rescue_leases", st -> st.bind("$1", secs).bind("$2", budget).bind("$3", dlq),
                        row -> new RescuedAttempt(row.get("job_id", Long.class), row.get("run_lease", Long.class),
                                row.get("disposition", String.class)))
                .collectList()
                .doOnNext(l -> leaseRescued.addAndGet(l.size()));
    }

    /** Attempts closed by lease-side rescue in this process. */
    public long leaseRescued() {
        return leaseRescued.get();
    }

    /** Attempts closed by stale rescue in this process. */
    public long staleRescued() {
        return staleRescued.get();
    }

    /** Attempts closed by deadline rescue in this process. */
    public long deadlineRescued() {
        return deadlineRescued.get();
    }
}
