package dev.riffle.engine.internal.notify;

import dev.riffle.engine.internal.time.EngineClock;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.postgresql.api.PostgresqlResult;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * LISTEN on one dedicated, unpooled connection (docs/design/delivery-contract.md, Wake-ups). Each notification carries
 * a queue name; each (re)connect emits {@link #ALL} so subscriptions poll for work announced while the listener was
 * down. While disconnected, {@link #isListening()} is false and subscriptions poll at the short interval instead.
 */
public final class WakeupListener {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.notify");

    /** First reconnect delay after the LISTEN connection is lost; doubles (with jitter) per failed attempt. */
    static final Duration RECONNECT_MIN_BACKOFF = Duration.ofMillis(100);
    /** Longest wait between reconnect attempts: a database back from an outage is heard within this. */
    static final Duration RECONNECT_MAX_BACKOFF = Duration.ofSeconds(2);

    /** Wake-up for every queue. */
    public static final String ALL = "*";

    private final Sinks.Many<String> wakeups = Sinks.many().multicast().directBestEffort();
    private final Sinks.Many<String> cancels = Sinks.many().multicast().directBestEffort();
    private final Sinks.Many<String> callbacks = Sinks.many().multicast().directBestEffort();
    private final Disposable connection;
    private volatile boolean listening;
    // EngineClock nanos when the connection was lost, 0 while connected (touched by the connection chain only).
    private volatile long downSinceNanos;

    /**
     * Starts listening on the schema's channels: ready (queue names), cancel ({@code jobId:runLease} of cancelled or
     * rescued attempts) and callback (ids of resolved callbacks). Channel names are quoted here.
     */
    public WakeupListener(Mono<PostgresqlConnection> sessions, NotifyChannels channels, EngineClock clock,
                          Scheduler scheduler) {
        this(sessions, channels, clock, scheduler, dev.riffle.engine.internal.metrics.Recorder.NONE);
    }

    /** As above, counting reconnects (RiffleMeter.LISTENER_RECONNECTS) in {@code meters}. */
    public WakeupListener(Mono<PostgresqlConnection> sessions, NotifyChannels channels, EngineClock clock,
                          Scheduler scheduler, dev.riffle.engine.internal.metrics.Recorder meters) {
        String readyChannel = channels.ready();
        String cancelChannel = channels.cancel();
        String callbackChannel = channels.callback();
        String channel = readyChannel;
        String listen = "LISTEN " + quote(readyChannel) + "; LISTEN " + quote(cancelChannel) + "; LISTEN "
                + quote(callbackChannel);
        this.connection = Flux.usingWhen(sessions,
                        (PostgresqlConnection c) -> c.createStatement(listen).execute()
                                .flatMap(PostgresqlResult::getRowsUpdated)
                                .thenMany(Flux.just(ALL)
                                        .doOnNext(x -> {
                                            listening = true;
                                            long since = downSinceNanos;
                                            if (since != 0) {
                                                downSinceNanos = 0;
                                                meters.record(dev.riffle.engine.api.RiffleMeter.LISTENER_RECONNECTS, 1);
                                                log.info("wake-up listener reconnected after {} ms", (clock.nanos() - since) / 1_000_000);
                                            } else {
                                                log.debug("listening on {}", channel);
                                            }
                                        })
                                        .concatWith(c.getNotifications().flatMap(n -> {
                                            String payload = n.getParameter() == null ? "" : n.getParameter();
                                            if (cancelChannel.equals(n.getName())) {
                                                cancels.tryEmitNext(payload);
                                                return Flux.empty();
                                            }
                                            if (callbackChannel.equals(n.getName())) {
                                                callbacks.tryEmitNext(payload);
                                                return Flux.empty();
                                            }
                                            return Flux.just(payload.isEmpty() ? ALL : payload);
                                        }, 1, 1))),
                        PostgresqlConnection::close)
                .doOnError(e -> {
                    listening = false;
                    // Every failed reconnect ends here too; only the first of a run is worth a line.
                    if (downSinceNanos == 0) {
                        downSinceNanos = clock.nanos() | 1;
                        log.warn("wake-up listener lost its connection ({}); polling until it reconnects", e.toString());
                    } else {
                        log.debug("wake-up listener reconnect failed: {}", e.toString());
                    }
                })
                .retryWhen(Retry.backoff(Long.MAX_VALUE, RECONNECT_MIN_BACKOFF).maxBackoff(RECONNECT_MAX_BACKOFF)
                        .scheduler(scheduler))
                .subscribe(q -> wakeups.tryEmitNext(q), e -> listening = false, () -> listening = false);
    }

    /** Queue names (or {@link #ALL}) as notifications arrive. Hot. */
    public Flux<String> wakeups() {
        return wakeups.asFlux();
    }

    /** Cancelled attempts as {@code jobId:runLease}. Hot. */
    public Flux<String> cancels() {
        return cancels.asFlux();
    }

    /** Ids of callbacks resolved anywhere. Hot. */
    public Flux<String> callbacks() {
        return callbacks.asFlux();
    }

    private static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }

    /** Whether LISTEN is currently established. */
    public boolean isListening() {
        return listening;
    }

    /** Closes the listener connection. */
    public Mono<Void> close() {
        return Mono.fromRunnable(() -> {
            listening = false;
            connection.dispose();
            wakeups.tryEmitComplete();
            cancels.tryEmitComplete();
            callbacks.tryEmitComplete();
        });
    }
}
