package dev.riffle.engine.test.fault;

import dev.riffle.engine.DatabaseUrl;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * Server-side faults that need nothing but a superuser connection, so they work on the shared test server as well
 * as on a {@link PgCluster} the test owns (RELIABILITY.md §3.4, S21, S27, S28).
 *
 * <p>Every method blocks on JDBC: call it from the test thread, never from a Reactor non-blocking thread. Sessions
 * opened here name themselves {@value #APPLICATION_NAME}, which never matches an engine's {@code riffle...}
 * connection prefix unless a caller passes a pattern as broad as {@code riffle%}; {@link #terminate} skips them
 * anyway.
 */
public final class PgFaults {

    /** {@code application_name} of the sessions this class opens. */
    public static final String APPLICATION_NAME = "fault-kit";

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]{0,62}");

    private PgFaults() {}

    /**
     * Terminates ({@code pg_terminate_backend}) every backend of the server whose {@code application_name} matches
     * the SQL {@code LIKE} pattern, except this class's own sessions. The victims get {@code FATAL 57P01}.
     *
     * <p>Make the pattern specific to the engines of one test (a unique application name prefix per test): on a
     * shared server other test runs may have engines of their own.
     *
     * @return how many backends were signalled
     */
    public static int terminate(DatabaseUrl url, String applicationNameLike) {
        return terminate(url, applicationNameLike, List.of());
    }

    /**
     * Like {@link #terminate(DatabaseUrl, String)}, restricted to backends in one of the given
     * {@code pg_stat_activity.state} values (e.g. {@code active}, {@code idle in transaction}); an empty list means
     * any state. This is the harness pattern of S21(b), which spares idle pooled connections.
     */
    public static int terminate(DatabaseUrl url, String applicationNameLike, List<String> states) {
        Objects.requireNonNull(applicationNameLike, "applicationNameLike");
        String sql = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                + "WHERE application_name LIKE ? AND application_name <> ? AND pid <> pg_backend_pid() "
                + "AND (cardinality(?::text[]) = 0 OR state = ANY (?::text[]))";
        try (Connection c = connect(url); PreparedStatement ps = c.prepareStatement(sql)) {
            String[] st = states.toArray(String[]::new);
            ps.setString(1, applicationNameLike);
            ps.setString(2, APPLICATION_NAME);
            ps.setArray(3, c.createArrayOf("text", st));
            ps.setArray(4, c.createArrayOf("text", st));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new FaultException("pg_terminate_backend for application_name LIKE '" + applicationNameLike + "'", e);
        }
    }

    /**
     * Backends whose {@code application_name} matches the {@code LIKE} pattern, one {@code state} entry per backend
     * (e.g. to assert that no engine session is left {@code idle in transaction} after a fault).
     */
    public static List<String> backendStates(DatabaseUrl url, String applicationNameLike) {
        String sql = "SELECT coalesce(state, '') FROM pg_stat_activity WHERE application_name LIKE ? AND pid <> pg_backend_pid()";
        try (Connection c = connect(url); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, applicationNameLike);
            List<String> states = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    states.add(rs.getString(1));
                }
            }
            return states;
        } catch (SQLException e) {
            throw new FaultException("reading pg_stat_activity", e);
        }
    }

    /**
     * Opens a session that runs {@code BEGIN; SELECT txid_current();} and then stays idle in transaction, so the
     * server's xmin horizon cannot pass its xid: VACUUM keeps every tuple that died after it started (S27). The
     * pin lasts until {@link Hold#close()}.
     */
    public static Hold holdXid(DatabaseUrl url) {
        Connection c = open(url);
        try {
            c.setAutoCommit(false);
            long xid;
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT txid_current()")) {
                rs.next();
                xid = rs.getLong(1);
            }
            return new Hold(c, backendPid(c), xid, "xid " + xid);
        } catch (SQLException e) {
            closeQuietly(c);
            throw new FaultException("holding an xid", e);
        } catch (RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
    }

    /**
     * Opens a {@code REPEATABLE READ} transaction that takes {@code ACCESS SHARE} on {@code qualifiedTable} (which
     * must be {@code schema.table}, unquoted) and reads it, so it holds both the lock and a snapshot until
     * {@link Hold#close()}. A TRUNCATE of that table (or, for a partitioned parent, of any child) then waits for
     * it: the prune-is-blocked situation of S28. The reader holds no xid.
     */
    public static Hold holdAccessShare(DatabaseUrl url, String qualifiedTable) {
        String table = quoteQualified(qualifiedTable);
        Connection c = open(url);
        try {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            try (Statement st = c.createStatement()) {
                st.execute("LOCK TABLE " + table + " IN ACCESS SHARE MODE");
                // The first query fixes the REPEATABLE READ snapshot; the LOCK alone would not.
                try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + table)) {
                    rs.next();
                }
            }
            return new Hold(c, backendPid(c), -1, "ACCESS SHARE on " + qualifiedTable);
        } catch (SQLException e) {
            closeQuietly(c);
            throw new FaultException("holding ACCESS SHARE on " + qualifiedTable, e);
        } catch (RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
    }

    /** A plain autocommit superuser connection, tagged {@value #APPLICATION_NAME}. The caller closes it. */
    public static Connection open(DatabaseUrl url) {
        try {
            return connect(url);
        } catch (SQLException e) {
            throw new FaultException("connecting to " + url, e);
        }
    }

    static Connection connect(DatabaseUrl url) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", url.user());
        if (url.password() != null) {
            props.setProperty("password", url.password());
        }
        props.setProperty("ApplicationName", APPLICATION_NAME);
        // A server that was just stopped or crashed must fail the helper quickly instead of hanging the test.
        props.setProperty("connectTimeout", "5");
        props.setProperty("loginTimeout", "10");
        props.setProperty("socketTimeout", "60");
        return DriverManager.getConnection(url.jdbcUrl(), props);
    }

    static String quoteQualified(String qualified) {
        String[] parts = qualified.split("\\.", -1);
        if (parts.length != 2 || !IDENTIFIER.matcher(parts[0]).matches() || !IDENTIFIER.matcher(parts[1]).matches()) {
            throw new IllegalArgumentException("expected an unquoted schema.table name, got '" + qualified + "'");
        }
        return "\"" + parts[0] + "\".\"" + parts[1] + "\"";
    }

    private static int backendPid(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException ignored) {
            // Nothing useful to do: the original failure is what the caller needs to see.
        }
    }

    /**
     * A session holding something (an xid, a lock, a snapshot) until closed. Closing rolls back and disconnects;
     * it tolerates a session that a fault already killed.
     */
    public static final class Hold implements AutoCloseable {
        private final Connection connection;
        private final int backendPid;
        private final long xid;
        private final String what;

        Hold(Connection connection, int backendPid, long xid, String what) {
            this.connection = connection;
            this.backendPid = backendPid;
            this.xid = xid;
            this.what = what;
        }

        /** The server process id of the holding session (look it up in {@code pg_stat_activity}). */
        public int backendPid() {
            return backendPid;
        }

        /** The held transaction id, or -1 when the hold assigned none. */
        public long xid() {
            return xid;
        }

        /** The holding session's connection, e.g. to read more while holding; do not commit on it. */
        public Connection connection() {
            return connection;
        }

        @Override
        public void close() {
            try {
                if (!connection.isClosed()) {
                    connection.rollback();
                }
            } catch (SQLException ignored) {
                // The session may already be gone (terminated, server restarted); the hold is released either way.
            } finally {
                closeQuietly(connection);
            }
        }

        @Override
        public String toString() {
            return "Hold[" + what + ", backend " + backendPid + "]";
        }
    }

    /** A fault helper's own SQL failed (not the system under test). */
    public static final class FaultException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FaultException(String what, SQLException cause) {
            super(what + " failed [" + cause.getSQLState() + "]: " + cause.getMessage(), cause);
        }
    }
}
