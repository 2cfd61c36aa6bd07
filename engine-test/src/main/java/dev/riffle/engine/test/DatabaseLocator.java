package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds a PostgreSQL server for tests, once per JVM.
 *
 * <p>Steps, first match wins:
 * <ol>
 *   <li>an explicit URL: the {@value #URL_PROPERTY} system property, else the {@value #URL_ENV} environment
 *       variable, in any form {@link DatabaseUrl#parse} accepts; an unparsable value fails immediately instead of
 *       silently testing against something else;</li>
 *   <li>a server on 127.0.0.1:5432 that accepts a password-less (or {@code $PGPASSWORD}) login as {@code $PGUSER},
 *       {@code postgres} or {@code root}; database {@code test} when it exists and the user may create schemas in it,
 *       else {@code postgres}. This probe takes whatever server happens to listen there; turn it off with the
 *       {@value #PROBE_LOCAL_PROPERTY} system property or the {@value #PROBE_LOCAL_ENV} environment variable set to
 *       {@code false} (the property wins when both are set), e.g. {@code -Driffle.test.probe-local=false} in
 *       surefire's {@code argLine} or {@code systemPropertyVariables}, to always test against Testcontainers or the
 *       embedded server;</li>
 *   <li>Testcontainers, only if it is on the classpath and a Docker endpoint is hinted at (asking Testcontainers costs
 *       1-2 s and an ERROR log when there is no Docker, so it is not asked blindly);</li>
 *   <li>an {@link EmbeddedPostgresServer} (zonky, then the {@code runuser} fallback as root).</li>
 * </ol>
 *
 * <p>The result, or the failure, is cached: every test class in the JVM shares one server and pays the lookup once.
 * Servers this class starts are stopped at JVM exit. All methods block; call them from test or main threads.
 */
public final class DatabaseLocator {

    /** Environment variable that names the server explicitly. */
    public static final String URL_ENV = "RIFFLE_TEST_DATABASE_URL";

    /** System property that names the server explicitly; wins over {@value #URL_ENV}. */
    public static final String URL_PROPERTY = "riffle.test.database-url";

    /** System property that turns the 127.0.0.1:5432 probe on ({@code true}, the default) or off ({@code false}). */
    public static final String PROBE_LOCAL_PROPERTY = "riffle.test.probe-local";

    /** Environment variable with the meaning of {@value #PROBE_LOCAL_PROPERTY}; the property wins over it. */
    public static final String PROBE_LOCAL_ENV = "RIFFLE_TEST_PROBE_LOCAL";

    private static final Logger log = LoggerFactory.getLogger(DatabaseLocator.class);

    static final String LOCAL_HOST = "127.0.0.1";
    static final int LOCAL_PORT = 5432;
    /** Long enough for loopback, short enough that a machine without a server barely notices. */
    static final Duration LOCAL_CONNECT_TIMEOUT = Duration.ofMillis(300);

    private static final String TESTCONTAINERS_CLASS = "org.testcontainers.postgresql.PostgreSQLContainer";

    private static final Object LOCK = new Object();
    private static @Nullable LocatedDatabase located;
    private static @Nullable RuntimeException failure;
    private static @Nullable EmbeddedPostgresServer sharedEmbedded;

    private DatabaseLocator() {}

    /**
     * The server for this JVM, looked up on the first call.
     *
     * @throws IllegalArgumentException when {@value #URL_ENV} is set but not a PostgreSQL URL
     * @throws IllegalStateException when every step failed; the message lists each step's reason. Later calls rethrow
     *     the same failure rather than retrying for every test class.
     */
    public static LocatedDatabase locate() {
        synchronized (LOCK) {
            if (located != null) {
                return located;
            }
            if (failure != null) {
                throw rethrown(failure);
            }
            long t0 = System.nanoTime();
            try {
                LocatedDatabase result = lookUp(System.getenv(), systemProperties(), LOCAL_HOST, LOCAL_PORT,
                        Path.of(System.getProperty("user.home")));
                log.info("Riffle test database: {} (found in {} ms)", result.description(), millisSince(t0));
                located = result;
                return result;
            } catch (RuntimeException e) {
                failure = e;
                throw e;
            }
        }
    }

    /** Shorthand for {@code locate().url()}. */
    public static DatabaseUrl url() {
        return locate().url();
    }

    /**
     * An embedded server shared by the whole JVM, started on the first call, regardless of what {@link #locate()} would
     * pick. For demos and examples that must run on a machine with no PostgreSQL at all.
     *
     * @throws IllegalStateException when no embedded server can be started
     */
    public static DatabaseUrl embedded() {
        synchronized (LOCK) {
            return sharedEmbeddedServer().url();
        }
    }

    private static EmbeddedPostgresServer sharedEmbeddedServer() {
        // Called with LOCK held, so the server is started at most once.
        if (sharedEmbedded == null) {
            long t0 = System.nanoTime();
            sharedEmbedded = EmbeddedPostgresServer.start();
            log.info("Riffle test database: {} (started in {} ms)", sharedEmbedded.description(), millisSince(t0));
        }
        return sharedEmbedded;
    }

    /** The uncached lookup; host, port and home are parameters so tests can steer it past a running local server. */
    static LocatedDatabase lookUp(Map<String, String> env, String localHost, int localPort, Path home) {
        return lookUp(env, Map.of(), localHost, localPort, home);
    }

    /**
     * The uncached lookup with explicit system properties.
     *
     * @throws IllegalArgumentException when {@value #URL_PROPERTY}/{@value #URL_ENV} is not a PostgreSQL URL, or
     *     {@value #PROBE_LOCAL_PROPERTY}/{@value #PROBE_LOCAL_ENV} is neither true nor false
     */
    static LocatedDatabase lookUp(Map<String, String> env, Map<String, String> properties, String localHost,
                                  int localPort, Path home) {
        Optional<LocatedDatabase> explicit = fromProperty(properties).or(() -> fromEnvironment(env));
        if (explicit.isPresent()) {
            return explicit.get();
        }
        boolean probeLocal = probeLocal(env, properties);
        List<String> reasons = new ArrayList<>();
        reasons.add(URL_PROPERTY + " and " + URL_ENV + " not set");

        if (!probeLocal) {
            reasons.add("local probe of " + localHost + ":" + localPort + " turned off (" + PROBE_LOCAL_PROPERTY + "/"
                    + PROBE_LOCAL_ENV + ")");
        } else {
            try {
                Optional<LocatedDatabase> local = probeLocalServer(env, localHost, localPort, LOCAL_CONNECT_TIMEOUT);
                if (local.isPresent()) {
                    return local.get();
                }
                reasons.add("nothing listening on " + localHost + ":" + localPort);
            } catch (RuntimeException e) {
                reasons.add("local server: " + e.getMessage());
                log.warn("Ignoring the local server: {}", e.getMessage());
            }
        }

        Optional<String> dockerSkip = testcontainersSkipReason(env, home);
        if (dockerSkip.isEmpty()) {
            try {
                return TestcontainersPostgres.start(env);
            } catch (RuntimeException | LinkageError e) {
                reasons.add("Testcontainers: " + e);
                log.warn("Testcontainers could not start PostgreSQL; falling back to an embedded server", e);
            }
        } else {
            reasons.add("Testcontainers: " + dockerSkip.get());
        }

        try {
            EmbeddedPostgresServer server;
            synchronized (LOCK) {
                server = sharedEmbeddedServer();
            }
            return new LocatedDatabase(server.url(), LocatedDatabase.Source.EMBEDDED, server.description());
        } catch (RuntimeException e) {
            reasons.add(e.getMessage());
            IllegalStateException all = new IllegalStateException("no PostgreSQL server for tests. Tried: "
                    + String.join("; ", reasons) + ". Set " + URL_ENV + " to point at one.", e);
            throw all;
        }
    }

    /**
     * Step 1: the explicit URL, if any.
     *
     * @param env the environment to read (a parameter so tests need not mutate the real one)
     * @throws IllegalArgumentException when the variable is set but not a PostgreSQL URL
     */
    static Optional<LocatedDatabase> fromEnvironment(Map<String, String> env) {
        return fromSetting(URL_ENV, env.get(URL_ENV));
    }

    /** Step 1, first half: {@value #URL_PROPERTY}, if set; same rules as {@link #fromEnvironment}. */
    static Optional<LocatedDatabase> fromProperty(Map<String, String> properties) {
        return fromSetting(URL_PROPERTY, properties.get(URL_PROPERTY));
    }

    /** A URL named by {@code name} (a system property or an environment variable): empty when unset or blank. */
    private static Optional<LocatedDatabase> fromSetting(String name, @Nullable String raw) {
        if (raw == null || raw.isBlank()) {
            return Optional.empty();
        }
        DatabaseUrl url;
        try {
            url = DatabaseUrl.parse(raw);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + " is set but unusable: " + e.getMessage(), e);
        }
        return Optional.of(new LocatedDatabase(url, LocatedDatabase.Source.ENVIRONMENT, name + " (" + url.r2dbcUrl() + ")"));
    }

    /**
     * Whether step 2 runs: {@value #PROBE_LOCAL_PROPERTY}, else {@value #PROBE_LOCAL_ENV}, else true. Accepts
     * {@code true}/{@code false} (any case, surrounding blanks ignored).
     *
     * @throws IllegalArgumentException for any other value, naming the setting
     */
    static boolean probeLocal(Map<String, String> env, Map<String, String> properties) {
        String property = properties.get(PROBE_LOCAL_PROPERTY);
        if (property != null && !property.isBlank()) {
            return parseSwitch(PROBE_LOCAL_PROPERTY, property);
        }
        String variable = env.get(PROBE_LOCAL_ENV);
        if (variable != null && !variable.isBlank()) {
            return parseSwitch(PROBE_LOCAL_ENV, variable);
        }
        return true;
    }

    private static boolean parseSwitch(String name, String raw) {
        String v = raw.strip();
        if (v.equalsIgnoreCase("true")) {
            return true;
        }
        if (v.equalsIgnoreCase("false")) {
            return false;
        }
        throw new IllegalArgumentException(name + " must be true or false, got '" + raw + "'");
    }

    private static Map<String, String> systemProperties() {
        Map<String, String> props = new java.util.HashMap<>();
        for (String name : List.of(URL_PROPERTY, PROBE_LOCAL_PROPERTY)) {
            String v = System.getProperty(name);
            if (v != null) {
                props.put(name, v);
            }
        }
        return props;
    }

    /** Login names to try on a local server, in order, without duplicates. */
    static List<String> localUserCandidates(Map<String, String> env) {
        Set<String> users = new LinkedHashSet<>();
        String pgUser = env.get("PGUSER");
        if (pgUser != null && !pgUser.isBlank()) {
            users.add(pgUser.strip());
        }
        users.add("postgres");
        users.add("root");
        return List.copyOf(users);
    }

    /**
     * Step 2: a server on {@code host:port}. Returns empty when nothing listens; throws when something listens but no
     * candidate user can log in (that is worth reporting, not silently skipping).
     */
    static Optional<LocatedDatabase> probeLocalServer(Map<String, String> env, String host, int port, Duration timeout) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), (int) timeout.toMillis());
        } catch (IOException e) {
            return Optional.empty();
        }
        String password = env.get("PGPASSWORD");
        List<String> failures = new ArrayList<>();
        for (String user : localUserCandidates(env)) {
            for (String loginDb : List.of("postgres", "template1")) {
                DatabaseUrl login = new DatabaseUrl(host, port, loginDb, user, password, Map.of());
                try (Connection c = Jdbc.connect(login)) {
                    String database = schemaFriendlyDatabase(c).orElse(loginDb);
                    DatabaseUrl url = login.withDatabase(database);
                    return Optional.of(new LocatedDatabase(url, LocatedDatabase.Source.LOCAL_SERVER,
                            "local server " + host + ":" + port + " (user " + user + ", database " + database + ")"));
                } catch (SQLException e) {
                    failures.add(user + "@" + loginDb + ": " + e.getMessage());
                    // 3D000: no such database, so the other login database may still work for this user.
                    if (!"3D000".equals(e.getSQLState())) {
                        break;
                    }
                }
            }
        }
        throw new IllegalStateException("a server listens on " + host + ":" + port + " but no login worked ("
                + String.join("; ", failures) + "); set PGUSER/PGPASSWORD or " + URL_ENV);
    }

    /** {@code test} if it exists and we may create schemas there: keeps test schemas out of the admin database. */
    private static Optional<String> schemaFriendlyDatabase(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT datname FROM pg_database WHERE datname = 'test' "
                + "AND datallowconn AND has_database_privilege(current_user, datname, 'CREATE')")) {
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
            }
        }
    }

    /** Empty when Testcontainers should be tried, otherwise why not. */
    private static Optional<String> testcontainersSkipReason(Map<String, String> env, Path home) {
        if (!isClassPresent(TESTCONTAINERS_CLASS)) {
            return Optional.of("not on the classpath");
        }
        if (!dockerHintPresent(env, home)) {
            return Optional.of("no Docker endpoint (DOCKER_HOST, docker.sock, ~/.testcontainers.properties)");
        }
        try {
            if (!TestcontainersPostgres.dockerAvailable()) {
                return Optional.of("Docker endpoint hinted at but not available");
            }
        } catch (RuntimeException | LinkageError e) {
            return Optional.of("Docker check failed: " + e);
        }
        return Optional.empty();
    }

    /**
     * Whether a Docker endpoint plausibly exists. Cheap file and variable checks only, so machines without Docker (most
     * CI sandboxes) skip Testcontainers without its slow probe and ERROR log.
     */
    static boolean dockerHintPresent(Map<String, String> env, Path home) {
        String dockerHost = env.get("DOCKER_HOST");
        if (dockerHost != null && !dockerHost.isBlank()) {
            return true;
        }
        List<Path> candidates = new ArrayList<>(List.of(
                Path.of("/var/run/docker.sock"),
                home.resolve(".docker/run/docker.sock"),
                home.resolve(".testcontainers.properties")));
        String xdg = env.get("XDG_RUNTIME_DIR");
        if (xdg != null && !xdg.isBlank()) {
            candidates.add(Path.of(xdg, "docker.sock"));
        }
        return candidates.stream().anyMatch(Files::exists);
    }

    private static boolean isClassPresent(String name) {
        try {
            Class.forName(name, false, DatabaseLocator.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private static RuntimeException rethrown(RuntimeException cached) {
        // A fresh exception per caller keeps each stack trace meaningful; the cause is the original lookup failure.
        if (cached instanceof IllegalArgumentException) {
            return new IllegalArgumentException(cached.getMessage(), cached);
        }
        return new IllegalStateException(cached.getMessage(), cached);
    }

    private static long millisSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }
}
