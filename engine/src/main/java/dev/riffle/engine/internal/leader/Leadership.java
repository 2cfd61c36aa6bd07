package dev.riffle.engine.internal.leader;

import io.r2dbc.postgresql.api.PostgresqlConnection;
import dev.riffle.engine.internal.sql.SqlCatalog;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * Maintenance leader election (docs/design/maintenance.md): a session advisory lock held on one dedicated, unpooled
 * connection. Followers retry; the leader pings its connection; losing the connection loses leadership (the
 * server releases a session lock when the session ends) and another instance takes over. The lock is not a fence:
 * every maintenance step must be safe when two leaders briefly overlap.
 */
public final class Leadership {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.maintenance");

    /** First reconnect delay after the leadership session is lost; grows up to the follower retry interval. */
    static final Duration RECONNECT_MIN_BACKOFF = Duration.ofMillis(200);

    private final Disposable loop;
    private final AtomicLong terms = new AtomicLong();
    private volatile boolean leader;
    private volatile PostgresqlConnection current;

    /** Starts campaigning. */
    public Leadership(Mono<PostgresqlConnection> sessions, SqlCatalog sql, Duration retry, Duration ping,
                      Scheduler scheduler, String schema) {
        String tryLock = sql.get("leader_try_lock");
        String pingSql = sql.get("ping");
        String unlock = sql.get("leader_unlock");
        this.loop = Flux.usingWhen(sessions,
                        (PostgresqlConnection c) -> {
                            current = c;
                            return Flux.interval(Duration.ZERO, retry.compareTo(ping) < 0 ? retry : ping, scheduler)
                                    .onBackpressureDrop()
                                    .concatMap(t -> leader
                                            ? c.createStatement(pingSql).execute().flatMap(r -> r.map(row -> true)).then(Mono.just(true))
                                            : c.createStatement(tryLock).execute()
                                                    .flatMap(r -> r.map(row -> Boolean.TRUE.equals(row.get("acquired", Boolean.class))))
                                                    .next()
                                                    .doOnNext(acquired -> {
                                                        if (acquired) {
                                                            leader = true;
                                                            terms.incrementAndGet();
                                                            log.info("became maintenance leader for schema {}", schema);
                                                        }
                                                    }), 1);
                        },
                        c -> {
                            boolean was = leader;
                            leader = false;
                            current = null;
                            if (!was) {
                                return c.close();
                            }
                            log.info("gave up maintenance leadership for schema {}", schema);
                            // Release explicitly so a follower can take over at once; closing the session would
                            // release it too, but only once the server notices.
                            return c.createStatement(unlock).execute().flatMap(r -> r.map(row -> true))
                                    .onErrorResume(e -> Mono.empty())
                                    .then(c.close());
                        })
                .doOnError(e -> {
                    if (leader) {
                        log.warn("lost maintenance leadership for schema {}: {}", schema, e.toString());
                    }
                    leader = false;
                })
                .retryWhen(Retry.backoff(Long.MAX_VALUE, RECONNECT_MIN_BACKOFF).maxBackoff(retry).scheduler(scheduler))
                .subscribe(v -> {}, e -> leader = false);
    }

    /** Whether this process holds the maintenance lock right now. */
    public boolean isLeader() {
        return leader;
    }

    /** How many times this process became leader. */
    public long terms() {
        return terms.get();
    }

    /** The backend pid of the leader connection (for fault tests), or empty. */
    public Mono<Integer> backendPid() {
        PostgresqlConnection c = current;
        if (c == null) {
            return Mono.empty();
        }
        return c.createStatement("SELECT pg_backend_pid() AS pid").execute()
                .flatMap(r -> r.map(row -> row.get("pid", Integer.class))).next();
    }

    /** Steps down: closing the connection releases the session lock. */
    public Mono<Void> close() {
        return Mono.fromRunnable(() -> {
            leader = false;
            loop.dispose();
        });
    }
}
