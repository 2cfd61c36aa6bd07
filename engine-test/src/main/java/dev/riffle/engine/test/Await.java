package dev.riffle.engine.test;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Polling waits for tests. They sleep on the calling (test) thread rather than on a Reactor timer, so a wedged
 * scheduler makes a test fail with a timeout instead of hanging the run, and they never run on an engine thread.
 */
public final class Await {

    private static final long POLL_MILLIS = 25;

    private Await() {}

    /** Polls {@code condition} until it holds or {@code timeout} passes; returns whether it held. */
    public static boolean within(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            pause(Duration.ofMillis(POLL_MILLIS));
        }
        return true;
    }

    /** Polls {@code condition} until it holds; fails with {@code what} when {@code timeout} passes first. */
    public static void until(String what, Duration timeout, BooleanSupplier condition) {
        if (!within(timeout, condition)) {
            throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
        }
    }

    /** Lets time pass on the calling thread. */
    public static void pause(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting", e);
        }
    }
}
