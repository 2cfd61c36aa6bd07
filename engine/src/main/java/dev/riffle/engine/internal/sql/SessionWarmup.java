package dev.riffle.engine.internal.sql;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * Warm pooled connections (R__88_session_warmup.sql, docs/benchmarks.md "Session 12"). A new PostgreSQL backend
 * compiles and plans Riffle's hot-path functions on their first call, 20-50 ms of server CPU per connection; an
 * engine that meets load with cold connections pays it on all of them at once and its first jobs wait for it. Two
 * parts: {@link #warm} runs {@code warm_session()} once on every connection a pool the engine owns opens (at start,
 * after an idle eviction, after an outage), before the pool first hands it out ({@link Connections#pool}); {@link #fill}
 * opens the whole pool at start, so the engine starts with every connection warm.
 *
 * <p>Best effort: the warm-up writes nothing, and when it fails (an older schema without the function, a lock it
 * would wait for longer than 100 ms, a connection lost) the connection is used cold, as before.
 */
public final class SessionWarmup {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine");

    /** How long start waits for the pool to be opened and warmed, at most: 5 s. Past it the engine starts anyway. */
    public static final Duration FILL_TIMEOUT = Duration.ofSeconds(5);

    private SessionWarmup() {}

    /**
     * Runs the catalog's {@code warm_session} statement on {@code c}; completes empty whether it worked or not (a
     * failure is logged at debug: the connection is merely cold). Once per connection, when it opens.
     */
    public static Mono<Void> warm(Connection c, String warmSql) {
        return Mono.from(c.createStatement(warmSql).execute())
                .flatMapMany(r -> r.map((row, meta) -> 1))
                .then()
                .onErrorResume(e -> {
                    log.debug("pooled connection not warmed, it plans the hot path on first use instead: {}",
                            e.toString());
                    return Mono.empty();
                });
    }

    /**
     * Opens {@code connections} connections of {@code pool} at once and holds each until all are open (released
     * early, a connection could be handed out again and others never opened), so that every one is opened, and so
     * warmed; then releases them all. Completes with the number opened; never errors (what could not be opened
     * in {@code timeout}, timed on {@code timer}, the engine's scheduler, is opened on demand later, and warmed then).
     */
    public static Mono<Integer> fill(ConnectionFactory pool, int connections, Duration timeout, Scheduler timer) {
        return Mono.defer(() -> {
            Sinks.Empty<Void> allOpen = Sinks.empty();
            AtomicInteger pending = new AtomicInteger(connections);
            AtomicInteger opened = new AtomicInteger();
            return Flux.range(0, connections)
                    // Every connection is asked for at once (concurrency = connections, prefetch 1): the pool opens
                    // them side by side, and none is released before the last has arrived.
                    .flatMap(i -> {
                        AtomicBoolean arrived = new AtomicBoolean();
                        Runnable arrive = () -> {
                            if (arrived.compareAndSet(false, true) && pending.decrementAndGet() == 0) {
                                allOpen.tryEmitEmpty();
                            }
                        };
                        return Mono.usingWhen(pool.create(),
                                        c -> {
                                            opened.incrementAndGet();
                                            arrive.run();
                                            return allOpen.asMono();
                                        },
                                        Connection::close)
                                .doFinally(s -> arrive.run())
                                .onErrorResume(e -> {
                                    log.debug("pool warm-up could not open a connection: {}", e.toString());
                                    return Mono.empty();
                                });
                    }, connections, 1)
                    .then()
                    .timeout(timeout, Mono.fromRunnable(() -> log.info("pool warm-up: {} of {} connections open "
                            + "after {} ms; the rest open on demand", opened.get(), connections, timeout.toMillis())), timer)
                    .then(Mono.fromCallable(() -> {
                        log.debug("pool warm-up: {} of {} connections open and warmed", opened.get(), connections);
                        return opened.get();
                    }));
        });
    }
}
