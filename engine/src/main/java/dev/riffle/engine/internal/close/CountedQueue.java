package dev.riffle.engine.internal.close;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A lock-free queue with a count that many threads add to and take from at once, and whose {@link #count()} never
 * goes below zero. The count is raised before an item is queued and lowered by exactly what a take removed, so at
 * any moment it is at least the number of items a take can find; it may briefly exceed it (an item counted but not
 * queued yet), which only makes a take come back short. The opposite order (queue first, count second) let a take
 * remove an uncounted item and drive the count to -1, which once made the completion batcher take a flush slot it
 * never gave back (issue #10 item 2).
 */
final class CountedQueue<T> {
    private final ConcurrentLinkedQueue<T> items = new ConcurrentLinkedQueue<>();
    private final AtomicInteger count = new AtomicInteger();

    /** Adds {@code item}; returns the count including it. */
    int add(T item) {
        int n = count.incrementAndGet();
        items.add(item);
        return n;
    }

    /** Removes up to {@code max} items, oldest first; may return fewer than {@link #count()} promised, or none. */
    List<T> take(int max) {
        List<T> out = new ArrayList<>(Math.min(max, 256));
        T x;
        while (out.size() < max && (x = items.poll()) != null) {
            out.add(x);
        }
        count.addAndGet(-out.size());
        return out;
    }

    /** The oldest item not yet taken, or null; a racing take may remove it right after. */
    @org.jspecify.annotations.Nullable T peek() {
        return items.peek();
    }

    /** Items added and not yet taken (counting items whose add is still in progress); never negative. */
    int count() {
        return count.get();
    }
}
