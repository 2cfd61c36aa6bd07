package dev.riffle.bench;

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
    volatile long lastCompletionNanos;

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
        long now = System.nanoTime();
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
        long now = System.nanoTime();
        if (seq < 0 || seq >= capacity) {
            outOfRange.incrementAndGet();
            return;
        }
        if (completions.getAndIncrement((int) seq) == 0) {
            completedAt.set((int) seq, now);
            lastCompletionNanos = now;
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
        Histogram pickup = new Histogram(3_600_000_000L, 3);
        Histogram done = new Histogram(3_600_000_000L, 3);
        long clamped = 0;
        long missing = 0;
        int limit = (int) Math.min(capacity, enqueued.get());
        for (int i = 0; i < limit; i++) {
            long c = committedAt.get(i);
            if (c == 0 || c < fromNanos || c >= toNanos) {
                continue;
            }
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
        }
        return new Latencies(pickup, done, clamped, missing);
    }

    record Latencies(Histogram pickupMicros, Histogram completeMicros, long clampedToZero, long missing) {
    }
}
