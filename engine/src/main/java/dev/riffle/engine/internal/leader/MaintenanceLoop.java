package dev.riffle.engine.internal.leader;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Runs one maintenance service's {@code runOnce()} on a fixed tick while this process is leader. Ticks that
 * arrive while the previous run is still going are dropped (a run never overlaps itself in one process), and a
 * failing run is logged and retried on the next tick.
 */
public final class MaintenanceLoop {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.maintenance");

    private MaintenanceLoop() {}

    /** Starts the loop; dispose the result to stop it. */
    public static Disposable start(String name, Duration interval, Scheduler scheduler, BooleanSupplier leader,
                                   Supplier<Mono<?>> runOnce) {
        // Consecutive failed runs: a run of failures (an outage) is logged when it starts and when it ends.
        java.util.concurrent.atomic.AtomicLong failing = new java.util.concurrent.atomic.AtomicLong();
        return Flux.interval(interval, interval, scheduler)
                .onBackpressureDrop()
                .concatMap(tick -> leader.getAsBoolean()
                        ? Mono.defer(runOnce)
                                .then()
                                .doOnSuccess(v -> {
                                    long n = failing.get() == 0 ? 0 : failing.getAndSet(0);
                                    if (n > 0) {
                                        log.info("maintenance step {} works again after {} failed runs", name, n);
                                    }
                                })
                                .onErrorResume(e -> {
                                    if (failing.getAndIncrement() == 0) {
                                        log.warn("maintenance step {} failed, retrying every tick: {}", name, e.toString());
                                    }
                                    return Mono.empty();
                                })
                        : Mono.empty(), 1)
                .subscribe();
    }
}
