package dev.riffle.examples.webflux;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.examples.ExampleDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.r2dbc.spi.ConnectionFactory;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.RouterFunctions;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A small Spring WebFlux app, without Spring Boot, that places orders and fulfils them through Riffle.
 *
 * <ul>
 *   <li>{@code POST /orders} with {@code {"item": "book", "quantity": 2}} inserts an order and enqueues its
 *       fulfilment job in the same database transaction; {@code ?fail=true} throws after the enqueue, so both roll
 *       back;</li>
 *   <li>{@code GET /orders/{id}} returns the order and whether its job completed;</li>
 *   <li>{@code GET /jobs/counts} returns the queue's counts;</li>
 *   <li>{@code POST /callbacks/{id}} with a JSON object body resolves an external-wait callback registered by a
 *       job ({@code Job.registerCallback}): the webhook shape an external system (a payment provider, an approver)
 *       calls.</li>
 * </ul>
 * A worker subscription in the same process fulfils the orders (marks them in the app's table), completes the jobs
 * and logs them.
 *
 * <p>Run it with {@code mvn -pl examples exec:java -Dexec.mainClass=dev.riffle.examples.webflux.OrdersApp
 * -Dexec.args="--port 8080"}. The database is chosen as in the quick start ({@value ExampleDatabase#URL_ENV}, else
 * an embedded server). The app drops and recreates its schemas ({@value #RIFFLE_SCHEMA} and {@value #APP_SCHEMA})
 * at start, as befits a demo. It listens on 127.0.0.1 only.
 */
public final class OrdersApp implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(OrdersApp.class);

    /** The Riffle schema the app owns. */
    public static final String RIFFLE_SCHEMA = "riffle_orders";
    /** The schema of the app's own {@code orders} table. */
    public static final String APP_SCHEMA = "orders_example";
    /** Default HTTP port. */
    public static final int DEFAULT_PORT = 8080;

    // Jobs being fulfilled at once; each holds nothing but a completion in flight, so this can be generous.
    private static final int WORKER_CONCURRENCY = 32;
    private static final Duration START_TIMEOUT = Duration.ofMinutes(3);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    /**
     * How to start the app.
     *
     * @param port HTTP port; 0 picks a free one
     * @param url database URL; {@code null} means {@value ExampleDatabase#URL_ENV} or an embedded server
     * @param riffleSchema the engine's schema
     * @param appSchema the schema of the {@code orders} table
     */
    public record Settings(int port, @Nullable String url, String riffleSchema, String appSchema) {

        /** Validates the port; the schemas are validated when the engine is configured. */
        public Settings {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("--port must be between 0 and 65535, got " + port);
            }
            Objects.requireNonNull(riffleSchema, "riffleSchema");
            Objects.requireNonNull(appSchema, "appSchema");
        }

        /** Port {@value #DEFAULT_PORT}, the default schemas, the database from the environment or embedded. */
        public static Settings defaults() {
            return new Settings(DEFAULT_PORT, null, RIFFLE_SCHEMA, APP_SCHEMA);
        }

        /**
         * Parses {@code --port N} (also {@code --port=N}).
         *
         * @throws IllegalArgumentException when an argument is unknown or not a port
         */
        public static Settings parse(String... args) {
            Settings s = defaults();
            for (dev.riffle.examples.Flags.Flag f : dev.riffle.examples.Flags.parse(args)) {
                String flag = f.name();
                String value = f.value();
                if (!flag.equals("--port")) {
                    throw new IllegalArgumentException("unknown flag " + flag);
                }
                try {
                    s = new Settings(Integer.parseInt(value), s.url, s.riffleSchema, s.appSchema);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--port needs a whole number, got '" + value + "'");
                }
            }
            return s;
        }
    }

    private final ExampleDatabase db;
    private final Riffle riffle;
    private final ConnectionPool appConnections;
    private final Disposable worker;
    private final DisposableServer server;
    private final AtomicBoolean closed = new AtomicBoolean();

    private OrdersApp(ExampleDatabase db, Riffle riffle, ConnectionPool appConnections, Disposable worker,
                      DisposableServer server) {
        this.db = db;
        this.riffle = riffle;
        this.appConnections = appConnections;
        this.worker = worker;
        this.server = server;
    }

    /**
     * Starts everything: the database (embedded if need be), fresh schemas, the engine, the worker and the HTTP
     * server. Blocks until the server listens; call it from a plain thread.
     *
     * @throws SQLException when the schemas cannot be reset
     */
    public static OrdersApp start(Settings settings) throws SQLException {
        ExampleDatabase db = ExampleDatabase.open(settings.url());
        Riffle riffle = null;
        ConnectionPool pool = null;
        Disposable worker = null;
        try {
            // One pool for the app's transactions and the engine (README, "Your own ConnectionFactory"); the
            // engine's LISTEN and leader sessions come from the pool's unwrapped driver factory. Flyway needs JDBC
            // coordinates, hence migrationUrl. Built first so an invalid schema name fails before anything is dropped.
            pool = appConnectionPool(db.url());
            RiffleConfig config = RiffleConfig.builder()
                    .connectionFactory(pool)
                    .migrationUrl(db.url())
                    .schema(settings.riffleSchema())
                    .migrate(true)
                    .applicationName("orders-app.riffle")
                    .build();
            resetAppSchema(db, settings);
            riffle = Objects.requireNonNull(Riffle.start(config).block(START_TIMEOUT), "engine");
            worker = startWorker(riffle, pool, settings.appSchema());

            OrderHandlers handlers = new OrderHandlers(riffle, pool, settings.appSchema(), settings.riffleSchema());
            HttpHandler http = RouterFunctions.toHttpHandler(handlers.routes());
            DisposableServer server = HttpServer.create()
                    .host("127.0.0.1")
                    .port(settings.port())
                    .handle(new ReactorHttpHandlerAdapter(http))
                    .bindNow();
            log.info("orders app listening on http://127.0.0.1:{} (database: {})", server.port(), db.description());
            return new OrdersApp(db, riffle, pool, worker, server);
        } catch (RuntimeException | SQLException e) {
            if (worker != null) {
                worker.dispose();
            }
            if (riffle != null) {
                riffle.close().block(CLOSE_TIMEOUT);
            }
            if (pool != null) {
                pool.disposeLater().block(CLOSE_TIMEOUT);
            }
            db.close();
            throw e;
        }
    }

    /** The port the HTTP server listens on. */
    public int port() {
        return server.port();
    }

    /** The engine, e.g. to read counts. */
    public Riffle riffle() {
        return riffle;
    }

    /** The database the app uses. */
    public ExampleDatabase database() {
        return db;
    }

    /**
     * Stops taking requests, closes the engine (the worker's subscription ends and buffered completions are
     * flushed), then the app's connections and any embedded server. Blocks; idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        server.disposeNow(CLOSE_TIMEOUT);
        riffle.close().block(CLOSE_TIMEOUT);
        worker.dispose();
        appConnections.disposeLater().block(CLOSE_TIMEOUT);
        db.close();
    }

    /** Runs the app until the JVM is asked to stop (Ctrl-C). */
    public static void main(String[] args) throws SQLException {
        Settings settings;
        try {
            settings = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("orders app: " + e.getMessage());
            System.err.println("usage: OrdersApp [--port N]");
            System.exit(2);
            return;
        }
        OrdersApp app = start(settings);
        Runtime.getRuntime().addShutdownHook(new Thread(app::close, "orders-app-shutdown"));
        String base = "http://127.0.0.1:" + app.port();
        System.out.println("Orders app on " + base + " (schemas " + settings.riffleSchema() + " and "
                + settings.appSchema() + " were reset at start). Try:");
        System.out.println("  curl -si -X POST " + base + "/orders -H 'Content-Type: application/json' "
                + "-d '{\"item\":\"book\",\"quantity\":2}'");
        System.out.println("  curl -s " + base + "/orders/1");
        System.out.println("  curl -si -X POST '" + base + "/orders?fail=true' -H 'Content-Type: application/json' "
                + "-d '{\"item\":\"doomed\",\"quantity\":1}'");
        System.out.println("  curl -s " + base + "/jobs/counts");
        System.out.println("Ctrl-C stops it.");
        app.server.onDispose().block();
    }

    /** Drops the app's schemas and creates the orders table; blocking JDBC, on the starting thread. */
    private static void resetAppSchema(ExampleDatabase db, Settings settings) throws SQLException {
        db.dropSchemas(settings.riffleSchema(), settings.appSchema());
        String schema = "\"" + settings.appSchema() + "\"";
        try (Connection c = db.jdbc(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA " + schema);
            st.execute("CREATE TABLE " + schema + ".orders ("
                    + " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    + " item text NOT NULL,"
                    + " quantity int NOT NULL CHECK (quantity > 0),"
                    // Null only between the insert and the link, inside the order's transaction.
                    + " job_id bigint,"
                    + " created_at timestamptz NOT NULL DEFAULT now(),"
                    + " fulfilled_at timestamptz)");
        }
    }

    /**
     * The app's own pool: its transactions are its business; the engine borrows connections from it too and never
     * closes it (the app does, after the engine).
     */
    private static ConnectionPool appConnectionPool(DatabaseUrl url) {
        PostgresqlConnectionConfiguration.Builder cfg = PostgresqlConnectionConfiguration.builder()
                .host(url.host())
                .port(url.port())
                .database(url.database())
                .username(url.user())
                .applicationName("orders-app");
        if (url.password() != null) {
            cfg.password(url.password());
        }
        return new ConnectionPool(ConnectionPoolConfiguration.builder(new PostgresqlConnectionFactory(cfg.build()))
                .name("orders-app")
                .initialSize(1)
                // The app's requests and the engine's claims, completions and maintenance share it.
                .maxSize(16)
                .maxAcquireTime(Duration.ofSeconds(10))
                .build());
    }

    /**
     * Fulfils and completes every order job as it arrives. Delivery is at least once, so fulfilment is idempotent:
     * a second delivery of the same job finds the order already fulfilled and changes nothing.
     */
    private static Disposable startWorker(Riffle riffle, ConnectionFactory connections, String appSchema) {
        JsonMapper json = JsonMapper.builder().build();
        String fulfil = "UPDATE \"" + appSchema + "\".orders SET fulfilled_at = coalesce(fulfilled_at, now())"
                + " WHERE id = $1";
        return riffle.subscribe(OrderHandlers.QUEUE)
                .flatMap(job -> orderIdOf(job, json)
                        .flatMap(orderId -> fulfil(connections, fulfil, orderId)
                                .then(job.complete())
                                .doOnSuccess(v -> log.info("completed job {} for order {} (attempt {})", job.id(),
                                        orderId, job.attempt())))
                        .onErrorResume(e -> outcomeOfFailure(job, e)
                                .onErrorResume(recordFailure -> {
                                    log.warn("job {}: could not record its outcome: {}", job.id(),
                                            recordFailure.toString());
                                    return Mono.empty();
                                })), WORKER_CONCURRENCY, 1)
                .subscribe(
                        done -> { },
                        error -> log.error("the order worker stopped", error),
                        () -> log.info("the order worker stopped (engine closed)"));
    }

    /** Bad arguments never get better, so they fail the job; anything else (the database, say) is retried. */
    private static Mono<Void> outcomeOfFailure(Job job, Throwable error) {
        if (error instanceof BadJob) {
            log.warn("job {} failed for good: {}", job.id(), error.getMessage());
            return job.fail(String.valueOf(error.getMessage()));
        }
        log.warn("job {} (attempt {}) will be retried: {}", job.id(), job.attempt(), error.toString());
        return job.retry(error.toString());
    }

    /** The job's real work: mark the order fulfilled, on the app's own connections. */
    private static Mono<Void> fulfil(ConnectionFactory connections, String sql, long orderId) {
        return Mono.usingWhen(connections.create(),
                c -> Flux.from(c.createStatement(sql).bind("$1", orderId).execute())
                        .flatMap(result -> result.getRowsUpdated())
                        .then(),
                io.r2dbc.spi.Connection::close);
    }

    private static Mono<Long> orderIdOf(Job job, JsonMapper json) {
        return Mono.fromCallable(() -> {
            JsonNode orderId = json.readTree(job.argsJson()).path("orderId");
            if (!orderId.canConvertToLong()) {
                throw new BadJob("job " + job.id() + " has no numeric orderId: " + job.argsJson());
            }
            return orderId.asLong();
        });
    }

    /** A job that can never succeed, so retrying it would only waste attempts. */
    private static final class BadJob extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadJob(String message) {
            super(message, null, false, false);
        }
    }
}
