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

    // equals and hashCode by hand: a record's generated ones go through an invokedynamic bootstrap that the JIT did
    // not fully inline here, and the map is hit twice per job (add, remove); a JFR profile of a W=64 drain put
    // about 5 % of the event loops' samples in ObjectMethods.eq under this key.
    private record Key(long jobId, long runLease) {
        @Override
        public boolean equals(@org.jspecify.annotations.Nullable Object o) {
            return o instanceof Key k && k.jobId == jobId && k.runLease == runLease;
        }

        @Override
        public int hashCode() {
            return 31 * Long.hashCode(jobId) + Long.hashCode(runLease);
        }
    }

    private final Map<Key, ClaimedJob> jobs = new ConcurrentHashMap<>();
    // Attempts held per queue (queue limits: docs/limits.md). Entries are never removed: one per queue seen.
    private final Map<String, java.util.concurrent.atomic.AtomicInteger> perQueue = new ConcurrentHashMap<>();
    private volatile java.util.function.Consumer<String> onEnd = q -> {};
    private final EngineClock clock;

    /** Creates an empty registry judging attempt age with {@code clock}. */
    public InFlight(EngineClock clock) {
        this.clock = clock;
    }

    /** Tracks a delivered attempt. */
    public void add(ClaimedJob job) {
        if (jobs.put(new Key(job.id(), job.runLease()), job) == null) {
            perQueue.computeIfAbsent(job.queue(), q -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
        }
    }

    /** Forgets a finished attempt. */
    public void remove(long jobId, long runLease) {
        ended(jobs.remove(new Key(jobId, runLease)));
    }

    private void ended(@org.jspecify.annotations.Nullable ClaimedJob job) {
        if (job != null) {
            java.util.concurrent.atomic.AtomicInteger n = perQueue.get(job.queue());
            if (n != null) {
                n.decrementAndGet();
            }
            onEnd.accept(job.queue());
        }
    }

    /** Attempts of {@code queue} held right now. */
    public int held(String queue) {
        java.util.concurrent.atomic.AtomicInteger n = perQueue.get(queue);
        return n == null ? 0 : n.get();
    }

    /** Called with the queue of every attempt that leaves (queue limits wake claims waiting for room). */
    public void onEnd(java.util.function.Consumer<String> listener) {
        this.onEnd = listener;
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
            ended(job);
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
