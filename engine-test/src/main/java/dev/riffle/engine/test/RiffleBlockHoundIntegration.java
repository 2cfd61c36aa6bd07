package dev.riffle.engine.test;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * BlockHound allowances that every Riffle test run needs, picked up through {@code META-INF/services} when BlockHound is
 * installed (for example by {@code blockhound-junit-platform}).
 *
 * <p>Netty 4.2's default {@code AdaptivePoolingAllocator} briefly takes a {@code StampedLock} write lock when it grows or
 * frees a magazine. r2dbc-postgresql hits that path while encoding statements on the event loop, and BlockHound reports it
 * as {@code Unsafe#park}. The lock is held for a few instructions and is part of the allocator's design, so it is not the
 * kind of blocking BlockHound exists to catch (STACK.md P5, also seen as line/armeria#6344).
 *
 * <p>With an {@code sslmode} that starts TLS, r2dbc-postgresql builds a netty {@code SslContext} for each new
 * connection on the event loop, and the JDK seeds it from {@code /dev/urandom} (and may read its trust store) there.
 * That is the driver's connection setup, not per-statement work (the pool creates connections rarely); the
 * allowance is scoped to {@code SslContextBuilder#build} so any other file read on an event loop still fails the
 * build. Documented in docs/operations.md.
 */
public final class RiffleBlockHoundIntegration implements BlockHoundIntegration {

    /** Creates the integration; BlockHound instantiates it through the service loader. */
    public RiffleBlockHoundIntegration() {}

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines");
        builder.allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$Magazine", "free");
        builder.allowBlockingCallsInside("io.netty.handler.ssl.SslContextBuilder", "build");
        // A timer task cancelled on an event loop (a timeout whose source completed first) is removed from its
        // scheduler worker's DelayedWorkQueue under that queue's lock, held by the worker for a few heap operations.
        // When the lock is contended BlockHound throws from inside the lock's acquire, which leaves the lock with a
        // queued waiter that never runs: the worker then never runs its timers again (LimitsAcrossProcessesIT hung
        // on a 250 ms Mono.delay, the epoll thread's stale park on the parallel worker's queue lock in the thread
        // dump; reactor/reactor-core#2004 reports the same error). Not blocking I/O, so allowed.
        builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "remove");
        builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "offer");
        builder.allowBlockingCallsInside("java.util.concurrent.ScheduledThreadPoolExecutor$DelayedWorkQueue", "poll");
    }
}
