package dev.riffle.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * Per-run bookkeeping, indexed by the job's sequence number. Times are {@link System#nanoTime()} values taken in this
 * JVM: the producer records when the INSERT's commit returned, the handler when it starts and when its completion
 * became durable. Latencies are computed after the run, so a handler that starts before the producer has seen its
 * commit acknowledgement (possible with LISTEN/NOTIFY) is simply clamped to zero and counted.
 */
final class Tracker implements QueueSystem.JobSink {

    final int capacity;
    private final AtomicLongArray committedAt;
    private final AtomicLongArray startedAt;
    private final AtomicLongArray completedAt;
    private final AtomicIntegerArray completions;
    final AtomicLong enqueued = new AtomicLong();
    final AtomicLong startedUnique = new AtomicLong();
    final AtomicLong startsTotal = new AtomicLong();
    final AtomicLong completedUnique = new AtomicLong();
    final AtomicLong completedDuplicate = new AtomicLong();
    final AtomicLong outOfRange = new AtomicLong();
    final AtomicInteger errors = new AtomicInteger();
    final AtomicReference<Throwable> firstError = new AtomicReference<>();
    private final AtomicLong lastCompletion = new AtomicLong();

    Tracker(int capacity) {
        this.capacity = capacity;
        committedAt = new AtomicLongArray(capacity);
        startedAt = new AtomicLongArray(capacity);
        completedAt = new AtomicLongArray(capacity);
        completions = new AtomicIntegerArray(capacity);
    }

    void committed(long seq, long nanos) {
        committedAt.set((int) seq, nanos);
    }

    @Override
    public void started(long seq) {
        startedAt(seq, System.nanoTime());
    }

    /**
     * A handler start observed at {@code now} ({@link System#nanoTime()}, possibly in another JVM on this machine:
     * HotSpot on Linux reads CLOCK_MONOTONIC, whose origin all processes share; {@link ProcessFleet} checks this).
     */
    void startedAt(long seq, long now) {
        startsTotal.incrementAndGet();
        if (seq < 0 || seq >= capacity) {
            outOfRange.incrementAndGet();
            return;
        }
        if (startedAt.compareAndSet((int) seq, 0L, now)) {
            startedUnique.incrementAndGet();
        }
    }

    @Override
    public void completed(long seq) {
        completedAt(seq, System.nanoTime());
    }

    /** A durable completion observed at {@code now}; see {@link #startedAt}. */
    void completedAt(long seq, long now) {
        if (seq < 0 || seq >= capacity) {
            outOfRange.incrementAndGet();
            return;
        }
        if (completions.getAndIncrement((int) seq) == 0) {
            completedAt.set((int) seq, now);
            lastCompletion.accumulateAndGet(now, Math::max);
            completedUnique.incrementAndGet();
        } else {
            completedDuplicate.incrementAndGet();
        }
    }

    @Override
    public void error(Throwable t) {
        errors.incrementAndGet();
        firstError.compareAndSet(null, t);
    }

    /** The latest durable completion seen so far ({@link System#nanoTime()}), 0 before the first. */
    long lastCompletionNanos() {
        return lastCompletion.get();
    }

    long outstanding() {
        return enqueued.get() - completedUnique.get();
    }

    /** Completions whose durable time lies in [from, to). */
    long completedBetween(long fromNanos, long toNanos) {
        long n = 0;
        int limit = (int) Math.min(capacity, enqueued.get());
        for (int i = 0; i < limit; i++) {
            long t = completedAt.get(i);
            if (t != 0 && t >= fromNanos && t < toNanos) {
                n++;
            }
        }
        return n;
    }

    /** Latency histograms (microseconds) for jobs committed in [from, to). */
    Latencies latencies(long fromNanos, long toNanos) {
        return latencies(fromNanos, toNanos, Long.MIN_VALUE);
    }

    /**
     * Latency histograms (microseconds) for jobs committed in [from, to), measured from their commit or from
     * {@code floorNanos}, whichever is later (a drain measures from the moment the handlers started, not from the
     * pre-enqueue).
     */
    Latencies latencies(long fromNanos, long toNanos, long floorNanos) {
        Histogram pickup = new Histogram(3_600_000_000L, 3);
        Histogram done = new Histogram(3_600_000_000L, 3);
        Histogram run = new Histogram(3_600_000_000L, 3);
        long clamped = 0;
        long missing = 0;
        int limit = (int) Math.min(capacity, enqueued.get());
        for (int i = 0; i < limit; i++) {
            long c = committedAt.get(i);
            if (c == 0 || c < fromNanos || c >= toNanos) {
                continue;
            }
            c = Math.max(c, floorNanos);
            long s = startedAt.get(i);
            long d = completedAt.get(i);
            if (s == 0 || d == 0) {
                missing++;
                continue;
            }
            long p = (s - c) / 1000;
            if (p < 0) {
                clamped++;
                p = 0;
            }
            pickup.recordValue(Math.min(p, 3_600_000_000L));
            done.recordValue(Math.min(Math.max(0, (d - c) / 1000), 3_600_000_000L));
            run.recordValue(Math.min(Math.max(0, (d - s) / 1000), 3_600_000_000L));
        }
        return new Latencies(pickup, done, run, clamped, missing);
    }

    /**
     * Pickup latency per second of commit time in [from, to): one map per second with the second's index, the jobs
     * committed in it and their pickup p50, p99 and max (ms), each second measured by {@link #latencies(long, long)}.
     */
    List<Map<String, Object>> pickupBySecond(long fromNanos, long toNanos) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (long b = 0, t = fromNanos; t < toNanos; b++, t += 1_000_000_000L) {
            Histogram p = latencies(t, Math.min(t + 1_000_000_000L, toNanos)).pickupMicros();
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("second", b);
            row.put("jobs", p.getTotalCount());
            if (p.getTotalCount() > 0) {
                row.put("pickup_p50_ms", p.getValueAtPercentile(50) / 1000.0);
                row.put("pickup_p99_ms", p.getValueAtPercentile(99) / 1000.0);
                row.put("pickup_max_ms", p.getMaxValue() / 1000.0);
            }
            out.add(row);
        }
        return out;
    }

    /**
     * Latencies in microseconds: enqueue commit to handler start (pickup), enqueue commit to durable completion
     * (complete), and handler start to durable completion (startToComplete: the handler plus the completion path).
     */
    record Latencies(Histogram pickupMicros, Histogram completeMicros, Histogram startToCompleteMicros,
                     long clampedToZero, long missing) {
    }
}
