package dev.riffle.engine.internal.rescue;

import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Mono;

/**
 * Stale and deadline rescue of compact receipts (DESIGN.md §6.4.1, §6.5): one pass each, bounded by a budget of
 * closed attempts and a per-slot window of visited claims. The cursor sweeps live in the database; this class only
 * calls them and counts what they closed. Rescued workers are told to stop through the cancel channel.
 */
public final class Rescuer {

    private final Db db;
    private final Duration staleAfter;
    private final int budget;
    private final int window;
    private final boolean dlq;
    private final AtomicLong staleRescued = new AtomicLong();
    private final AtomicLong deadlineRescued = new AtomicLong();

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

    /** Attempts closed by stale rescue in this process. */
    public long staleRescued() {
        return staleRescued.get();
    }

    /** Attempts closed by deadline rescue in this process. */
    public long deadlineRescued() {
        return deadlineRescued.get();
    }
}
