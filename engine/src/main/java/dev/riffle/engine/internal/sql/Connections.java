package dev.riffle.engine.internal.sql;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.r2dbc.postgresql.client.SSLMode;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Driver and pool setup for one engine: the pooled factory for statements and the direct factory for the
 * long-lived LISTEN and leadership sessions. Every connection carries {@code application_name} and
 * {@code plan_cache_mode = force_custom_plan}.
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
     * Where and as whom to connect; {@code options} are the URL's libpq options, of which the TLS ones
     * ({@code sslmode}, {@code sslrootcert}, {@code sslcert}, {@code sslkey}) are mapped onto the driver.
     */
    public record Endpoint(String host, int port, String database, String user, @Nullable String password,
                           Map<String, String> options, String applicationName) {}

    private Connections() {}

    /** The statement pool, named after the schema. */
    public static ConnectionPool pool(Endpoint endpoint, String schema, int poolSize) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(factory(endpoint, "pool"))
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

    /** A factory for sessions outside the pool; {@code purpose} ends their {@code application_name}. */
    public static PostgresqlConnectionFactory factory(Endpoint endpoint, String purpose) {
        PostgresqlConnectionConfiguration.Builder b = PostgresqlConnectionConfiguration.builder()
                .host(endpoint.host())
                .port(endpoint.port())
                .database(endpoint.database())
                .username(endpoint.user())
                .applicationName(endpoint.applicationName() + "." + purpose)
                // Custom plans prune partitions at plan time; a generic plan on a partitioned parent would lock
                // every child and queue behind a prune's ACCESS EXCLUSIVE (docs/design/lock-order.md).
                .options(Map.of("plan_cache_mode", "force_custom_plan"));
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
