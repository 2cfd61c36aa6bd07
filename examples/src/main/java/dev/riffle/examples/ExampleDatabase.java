package dev.riffle.examples;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.test.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import org.jspecify.annotations.Nullable;

/**
 * Where the examples keep their data: the database named by {@value #URL_ENV}, or a throwaway embedded PostgreSQL
 * started for the life of this object when the variable is unset.
 *
 * <p>Every method blocks (JDBC, process start-up). Call them from a main or test thread, never from a Reactor
 * thread.
 */
public final class ExampleDatabase implements AutoCloseable {

    /** Environment variable naming the database, e.g. {@code r2dbc:postgresql://postgres@127.0.0.1:5432/test}. */
    public static final String URL_ENV = "RIFFLE_DATABASE_URL";

    private final DatabaseUrl url;
    private final @Nullable EmbeddedPostgresServer embedded;
    private final String description;

    private ExampleDatabase(DatabaseUrl url, @Nullable EmbeddedPostgresServer embedded, String description) {
        this.url = url;
        this.embedded = embedded;
        this.description = description;
    }

    /**
     * Uses {@code explicitUrl} when given, else {@value #URL_ENV} when set, else starts an embedded server.
     *
     * @throws IllegalArgumentException when the chosen URL is not a PostgreSQL URL
     * @throws IllegalStateException when no embedded server can be started
     */
    public static ExampleDatabase open(@Nullable String explicitUrl) {
        if (explicitUrl != null && !explicitUrl.isBlank()) {
            DatabaseUrl url = DatabaseUrl.parse(explicitUrl);
            return new ExampleDatabase(url, null, url.r2dbcUrl());
        }
        String fromEnv = System.getenv(URL_ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            DatabaseUrl url;
            try {
                url = DatabaseUrl.parse(fromEnv);
            } catch (IllegalArgumentException e) {
                // Falling back to an embedded server here would hide a typo behind a working demo.
                throw new IllegalArgumentException(URL_ENV + " is set but unusable: " + e.getMessage(), e);
            }
            return new ExampleDatabase(url, null, url.r2dbcUrl() + " (from " + URL_ENV + ")");
        }
        EmbeddedPostgresServer server = EmbeddedPostgresServer.start();
        return new ExampleDatabase(server.url(), server, server.description());
    }

    /** How to reach the database. */
    public DatabaseUrl url() {
        return url;
    }

    /** Whether this object started the server (and will stop it on {@link #close()}). */
    public boolean isEmbedded() {
        return embedded != null;
    }

    /** One line for the console. */
    public String description() {
        return description;
    }

    /** A plain JDBC connection, for set-up and end-of-run reads on a non-Reactor thread. */
    public Connection jdbc() throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", url.user());
        if (url.password() != null) {
            props.setProperty("password", url.password());
        }
        // The driver is called directly: under exec:java, DriverManager may have been initialised by Maven's own
        // class loader and not see the driver on the example's class path.
        Connection c = new org.postgresql.Driver().connect(url.jdbcUrl(), props);
        if (c == null) {
            throw new SQLException("the PostgreSQL driver did not accept " + url.jdbcUrl());
        }
        return c;
    }

    /**
     * Drops each schema with everything in it. The names are the examples' own constants or validated by
     * {@code RiffleConfig}, and are quoted, so they cannot smuggle SQL in.
     */
    public void dropSchemas(String... schemas) throws SQLException {
        try (Connection c = jdbc(); Statement st = c.createStatement()) {
            for (String schema : schemas) {
                st.execute("DROP SCHEMA IF EXISTS \"" + schema.replace("\"", "\"\"") + "\" CASCADE");
            }
        }
    }

    /** Stops the embedded server, if this object started one. */
    @Override
    public void close() {
        if (embedded != null) {
            embedded.close();
        }
    }
}
