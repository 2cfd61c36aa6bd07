package dev.riffle.engine.internal.sql;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.postgresql.client.SSLMode;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import io.r2dbc.spi.Wrapped;
import java.time.Duration;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * Driver and pool setup for one engine: the pooled factory for statements and the direct sessions for the
 * long-lived LISTEN and leadership connections.
 *
 * <p>From a URL, every connection the engine opens carries {@code application_name} and
 * {@code plan_cache_mode = auto} ({@link #SESSION_PLAN_CACHE_MODE}) as startup options. With the application's
 * {@code ConnectionFactory}, the engine sets both (with {@code set_config}) only on sessions it owns: the connections
 * of a pool it creates around a non-pooled factory, and its LISTEN and leader sessions. It sets nothing on the
 * connections of an application's {@code ConnectionPool}: nothing the engine runs needs session state there. Every
 * statement is schema-qualified ({@link SqlCatalog}), and every PL/pgSQL function the catalog calls fixes its own plan
 * mode in its {@code SET} clause (docs/design/lock-order.md).
 */
public final class Connections {
    /** Pooled connections idle this long are closed: {@value #POOL_MAX_IDLE_MINUTES} minutes. */
    public static final long POOL_MAX_IDLE_MINUTES = 10;
    /** How long a statement waits for a pooled connection before it fails (and a transient retry may follow). */
    public static final Duration POOL_MAX_ACQUIRE = Duration.ofSeconds(10);
    /** Acquires retried when a pooled connection fails validation (its backend died): {@value}. */
    public static final int POOL_ACQUIRE_RETRIES = 3;
    /** Connections the pool opens at start (at most the pool size): {@value}. */
    public static final int POOL_INITIAL_SIZE = 2;
    /**
     * The {@code plan_cache_mode} of the sessions the engine owns: {@value}, PostgreSQL's own default, set
     * explicitly so a server-wide setting does not change it. The catalog's statements are calls of functions that
     * fix their own plan mode, and the few that read tables directly prune no partition by a parameter, so no
     * statement needs a custom plan at the top level. Under {@code force_custom_plan} (until session 18) every claim,
     * completion and enqueue was planned again on every execution: 5 % of the server's CPU in a steady run
     * (docs/benchmarks.md, session 18). {@code auto} caches a generic plan after five executions of a statement on
     * a connection, and still chooses a custom plan where the planner finds it cheaper (admin searches).
     */
    public static final String SESSION_PLAN_CACHE_MODE = "auto";

    /**
     * Where and as whom to connect; {@code options} are the URL's libpq options, of which the TLS ones
     * ({@code sslmode}, {@code sslrootcert}, {@code sslcert}, {@code sslkey}) are mapped onto the driver.
     */
    public record Endpoint(String host, int port, String database, String user, @Nullable String password,
                           Map<String, String> options, String applicationName) {}

    private Connections() {}

    /**
     * The statement pool, named after the schema; with {@code warmSql} (the catalog's {@code warm_session}), every
     * connection it opens is warmed before it is handed out ({@link SessionWarmup#warm}).
     */
    public static ConnectionPool pool(Endpoint endpoint, String schema, int poolSize, @Nullable String warmSql) {
        ConnectionFactory opened = factory(endpoint, "pool");
        return pool(warmSql == null ? opened : onOpen(opened, c -> SessionWarmup.warm(c, warmSql)), schema, poolSize);
    }

    /**
     * The engine's own pool around an application's non-pooled {@code factory} (closing the pool does not close the
     * factory); each new connection gets {@code application_name} and {@code plan_cache_mode} once, then, with
     * {@code warmSql}, is warmed ({@link SessionWarmup#warm}).
     */
    public static ConnectionPool pool(ConnectionFactory factory, String schema, int poolSize, String applicationName,
                                      @Nullable String warmSql) {
        return pool(onOpen(factory, c -> warmSql == null
                        ? sessionSettings(c, applicationName + ".pool")
                        : sessionSettings(c, applicationName + ".pool").then(SessionWarmup.warm(c, warmSql))),
                schema, poolSize);
    }

    /** The pool both overloads build around the factory whose connections it holds. */
    private static ConnectionPool pool(ConnectionFactory connections, String schema, int poolSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(connections)
                .name("riffle-" + schema)
                .initialSize(Math.min(POOL_INITIAL_SIZE, poolSize))
                .maxSize(poolSize)
                .maxIdleTime(Duration.ofMinutes(POOL_MAX_IDLE_MINUTES))
                .maxAcquireTime(POOL_MAX_ACQUIRE)
                // A pooled connection whose backend died fails validation on acquire; retrying the acquire
                // hands out a fresh one instead of failing the caller.
                .acquireRetry(POOL_ACQUIRE_RETRIES)
                .build());
    }

    /**
     * {@code inner} with {@code setup} run once on every connection it opens, before the pool sees the connection.
     * Not the pool's {@code postAllocate}: r2dbc-pool runs that on every acquire of a pooled connection (a warm-up
     * there ran once per statement, 3,973 times in a 12 s bench run), while session setup belongs to the session.
     * A setup that fails closes the connection and fails its creation (the pool's acquire retry opens another).
     */
    static ConnectionFactory onOpen(ConnectionFactory inner, Function<Connection, Mono<Void>> setup) {
        return new SetupConnectionFactory(inner, setup);
    }

    private record SetupConnectionFactory(ConnectionFactory inner, Function<Connection, Mono<Void>> setup)
            implements ConnectionFactory, Wrapped<ConnectionFactory> {
        @Override
        public Publisher<? extends Connection> create() {
            return Mono.from(inner.create()).flatMap(c -> setup.apply(c).thenReturn(c)
                    .onErrorResume(e -> Mono.from(c.close()).onErrorResume(x -> Mono.empty()).then(Mono.error(e))));
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return inner.getMetadata();
        }

        @Override
        public ConnectionFactory unwrap() {
            return inner;
        }
    }

    /** Whether {@code factory} pools its connections: an r2dbc-pool {@code ConnectionPool}, or a wrapper of one. */
    public static boolean isPooled(ConnectionFactory factory) {
        for (Object f = factory; f instanceof ConnectionFactory; f = f instanceof Wrapped<?> w ? w.unwrap() : null) {
            if (f instanceof ConnectionPool) {
                return true;
            }
        }
        return false;
    }

    /**
     * The factory the LISTEN and leader sessions are opened from when the application gave none: {@code factory}
     * unwrapped ({@code io.r2dbc.spi.Wrapped}) down to the innermost {@code ConnectionFactory}.
     */
    public static ConnectionFactory unwrapped(ConnectionFactory factory) {
        ConnectionFactory f = factory;
        while (f instanceof Wrapped<?> w && w.unwrap() instanceof ConnectionFactory inner && inner != f) {
            f = inner;
        }
        return f;
    }

    /** Long-lived sessions from the URL's direct factory ({@code application_name} ends in {@code .listen}). */
    public static Mono<PostgresqlConnection> sessions(Endpoint endpoint) {
        PostgresqlConnectionFactory direct = factory(endpoint, "listen");
        return Mono.defer(direct::create);
    }

    /**
     * Long-lived sessions from an application's {@code factory}: each subscription opens one, checks it is an
     * r2dbc-postgresql session (LISTEN needs the driver's notifications) and sets {@code application_name}.
     */
    public static Mono<PostgresqlConnection> sessions(ConnectionFactory factory, String applicationName) {
        return Mono.defer(() -> Mono.from(factory.create())).flatMap(c -> {
            if (c instanceof PostgresqlConnection pg) {
                return Mono.from(sessionSettings(pg, applicationName + ".listen")).thenReturn(pg)
                        .onErrorResume(e -> Mono.from(pg.close()).onErrorResume(x -> Mono.empty()).then(Mono.error(e)));
            }
            return Mono.from(c.close()).onErrorResume(x -> Mono.empty()).then(Mono.error(new IllegalStateException(
                    "the LISTEN/leader factory must open r2dbc-postgresql sessions directly, got "
                            + c.getClass().getName() + "; set listenConnectionFactory(...) to the driver's "
                            + "PostgresqlConnectionFactory (not a pool)")));
        });
    }

    /** Sets {@code application_name} and {@code plan_cache_mode} on a session the engine owns. */
    private static Mono<Void> sessionSettings(Connection c, String applicationName) {
        return Mono.from(c.createStatement("SELECT set_config('application_name', $1, false), "
                                + "set_config('plan_cache_mode', $2, false)")
                        .bind("$1", applicationName).bind("$2", SESSION_PLAN_CACHE_MODE).execute())
                .flatMapMany(r -> r.map((row, meta) -> 1))
                .then();
    }

    /** A factory for sessions outside the pool; {@code purpose} ends their {@code application_name}. */
    public static PostgresqlConnectionFactory factory(Endpoint endpoint, String purpose) {
        PostgresqlConnectionConfiguration.Builder b = PostgresqlConnectionConfiguration.builder()
                .host(endpoint.host())
                .port(endpoint.port())
                .database(endpoint.database())
                .username(endpoint.user())
                .applicationName(endpoint.applicationName() + "." + purpose)
                .options(Map.of("plan_cache_mode", SESSION_PLAN_CACHE_MODE));
        if (endpoint.password() != null) {
            b.password(endpoint.password());
        }
        applyTls(b, endpoint.options());
        return new PostgresqlConnectionFactory(b.build());
    }

    /** The URL's libpq TLS options, mapped onto the driver (the JDBC URL for Flyway carries them as they are). */
    private static void applyTls(PostgresqlConnectionConfiguration.Builder b, Map<String, String> options) {
        String mode = options.get("sslmode");
        if (mode != null) {
            b.sslMode(SSLMode.fromValue(mode));
        }
        if (options.containsKey("sslrootcert")) {
            b.sslRootCert(options.get("sslrootcert"));
        }
        if (options.containsKey("sslcert")) {
            b.sslCert(options.get("sslcert"));
        }
        if (options.containsKey("sslkey")) {
            b.sslKey(options.get("sslkey"));
        }
    }
}
