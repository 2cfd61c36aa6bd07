package dev.riffle.engine.internal.limits;

import java.util.concurrent.atomic.AtomicReference;

/**
 * An in-memory token bucket on the engine's clock: refills continuously at {@code ratePerNano}, holds at most
 * {@code capacity} tokens, and hands out whole tokens only. Lock-free (one compare-and-set per change), so claim loops
 * on any thread share it without blocking.
 */
public final class TokenBucket {

    private record State(double tokens, long atNanos, double ratePerNano, double capacity) {
        State refilled(long now) {
            if (now <= atNanos) {
                return this;
            }
            return new State(Math.min(capacity, tokens + (now - atNanos) * ratePerNano), now, ratePerNano, capacity);
        }
    }

    private final AtomicReference<State> state;

    /** An unconfigured bucket: no tokens and no refill until {@link #configure}. */
    public TokenBucket(long nowNanos) {
        this.state = new AtomicReference<>(new State(0, nowNanos, 0, 0));
    }

    /**
     * Sets the refill rate and capacity. A bucket that had no capacity (new, or its engine's share was zero) starts
     * full when {@code startFull} (its engine is the only one on the queue), else empty; otherwise it is refilled at
     * the old rate up to now and cut to the new capacity.
     */
    public void configure(double ratePerNano, double capacity, long now, boolean startFull) {
        state.updateAndGet(s -> {
            if (s.capacity() <= 0) {
                return new State(startFull ? capacity : 0, now, ratePerNano, capacity);
            }
            State r = s.refilled(now);
            return new State(Math.min(capacity, r.tokens()), now, ratePerNano, capacity);
        });
    }

    /** Takes up to {@code max} whole tokens; returns how many it took (0 when fewer than one is there). */
    public int take(int max, long now) {
        while (true) {
            State s = state.get();
            State r = s.refilled(now);
            int n = (int) Math.min(max, Math.floor(r.tokens()));
            if (n <= 0) {
                return 0;
            }
            if (state.compareAndSet(s, new State(r.tokens() - n, r.atNanos(), r.ratePerNano(), r.capacity()))) {
                return n;
            }
        }
    }

    /** Gives back tokens taken for a claim that claimed fewer jobs (never above the capacity). */
    public void giveBack(int n, long now) {
        if (n > 0) {
            state.updateAndGet(s -> {
                State r = s.refilled(now);
                return new State(Math.min(r.capacity(), r.tokens() + n), r.atNanos(), r.ratePerNano(), r.capacity());
            });
        }
    }

    /** Nanoseconds until a whole token is there; {@link Long#MAX_VALUE} when the bucket does not refill. */
    public long nanosUntilToken(long now) {
        State r = state.get().refilled(now);
        if (r.tokens() >= 1) {
            return 0;
        }
        if (r.ratePerNano() <= 0 || r.capacity() < 1) {
            return Long.MAX_VALUE;
        }
        return (long) Math.ceil((1 - r.tokens()) / r.ratePerNano());
    }
}
