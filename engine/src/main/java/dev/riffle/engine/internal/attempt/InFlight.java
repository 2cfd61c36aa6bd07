package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.internal.time.EngineClock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Attempts delivered by this process and not yet finished, by {@code (jobId, runLease)}, so an operator's cancel
 * (or a rescue) announced by NOTIFY can signal the handler that holds the attempt. Entries leave when the attempt
 * is finished through the engine, whatever the outcome, so the map only holds what is really in flight.
 */
public final class InFlight {

    private record Key(long jobId, long runLease) {}

    private final Map<Key, ClaimedJob> jobs = new ConcurrentHashMap<>();
    private final EngineClock clock;

    /** Creates an empty registry judging attempt age with {@code clock}. */
    public InFlight(EngineClock clock) {
        this.clock = clock;
    }

    /** Tracks a delivered attempt. */
    public void add(ClaimedJob job) {
        jobs.put(new Key(job.id(), job.runLease()), job);
    }

    /** Forgets a finished attempt. */
    public void remove(long jobId, long runLease) {
        jobs.remove(new Key(jobId, runLease));
    }

    /**
     * Signals the attempt's handler, if this process holds it, and forgets the attempt. Payload form:
     * {@code jobId:runLease}.
     */
    public boolean signal(String payload) {
        int colon = payload.indexOf(':');
        if (colon <= 0) {
            return false;
        }
        try {
            // The attempt is closed in the database (cancelled or rescued): nothing of it is in flight here any
            // more, so it stops getting heartbeats and a graceful shutdown does not wait for it.
            ClaimedJob job = jobs.remove(new Key(Long.parseLong(payload.substring(0, colon)),
                    Long.parseLong(payload.substring(colon + 1))));
            if (job == null) {
                return false;
            }
            job.signalCancelled();
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** Attempts received at least {@code age} ago, or with progress to write, and still held (heartbeat candidates). */
    public java.util.List<ClaimedJob> heldLongerThan(java.time.Duration age) {
        long threshold = clock.nanos() - age.toNanos();
        java.util.List<ClaimedJob> out = new java.util.ArrayList<>();
        for (ClaimedJob j : jobs.values()) {
            if (j.deliveredNanos() - threshold <= 0 || j.hasPendingProgress()) {
                out.add(j);
            }
        }
        return out;
    }

    /** Attempts currently held. */
    public int size() {
        return jobs.size();
    }
}
