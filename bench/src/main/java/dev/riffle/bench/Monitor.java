package dev.riffle.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The harness's own database connection: schema resets, counter snapshots, dead-tuple counts, machine facts, and the
 * pinning session of the pinned scenario (a separate connection). Every statement here runs in autocommit, so each is
 * one transaction in {@code pg_stat_database.xact_commit}; {@link #statements} counts them so the report can say how
 * many of the measured commits were the harness's own.
 */
final class Monitor implements AutoCloseable {

    private final BenchConfig cfg;
    private final Connection conn;
    private Connection pin;
    private boolean pgstattuple;
    private String pgstattupleNote = "not tried";
    private String trackFunctionsRestore;
    long statements;
    /** Why {@link #checkpoint()} did not run (it is not tried again), or null when it ran or was not asked for. */
    String checkpointNote;

    Monitor(BenchConfig cfg) throws SQLException {
        this.cfg = cfg;
        this.conn = connect("monitor");
        try (Statement st = conn.createStatement()) {
            st.execute("SET lock_timeout = '2s'");
        }
    }

    /**
     * A {@code CHECKPOINT} before a measured run (when {@code --checkpoint-before-runs}): the run then starts with no
     * full-page-image debt and no timed checkpoint can begin inside it. A role without the right to checkpoint gets a
     * note in the report instead; the run goes on.
     */
    void checkpoint() {
        if (!cfg.checkpointBeforeRuns || checkpointNote != null) {
            return;
        }
        statements++;
        try (Statement st = conn.createStatement()) {
            st.execute("CHECKPOINT");
        } catch (SQLException e) {
            checkpointNote = "CHECKPOINT before runs failed, runs went on without it: " + e.getMessage();
            System.err.println(checkpointNote);
        }
    }

    /**
     * With {@code --database}: creates that database on the same server when it is missing and points the config at
     * it. Returns whether it was created.
     */
    static boolean useDatabase(BenchConfig cfg) throws SQLException {
        if (cfg.database == null || cfg.database.equals(cfg.url.database())) {
            return false;
        }
        if (!cfg.database.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw new BenchConfig.UsageException("--database must match [a-z_][a-z0-9_]*: " + cfg.database);
        }
        boolean created = false;
        Properties p = new Properties();
        p.setProperty("user", cfg.url.user());
        if (cfg.url.password() != null) {
            p.setProperty("password", cfg.url.password());
        }
        try (Connection c = DriverManager.getConnection(cfg.url.jdbcUrl(), p)) {
            boolean exists;
            try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_database WHERE datname = ?")) {
                ps.setString(1, cfg.database);
                try (ResultSet rs = ps.executeQuery()) {
                    exists = rs.next();
                }
            }
            if (!exists) {
                try (Statement st = c.createStatement()) {
                    st.execute("CREATE DATABASE " + cfg.database);
                    created = true;
                } catch (SQLException e) {
                    if (!"42P04".equals(e.getSQLState())) {
                        throw e;
                    }
                }
            }
        }
        cfg.url = cfg.url.withDatabase(cfg.database);
        return created;
    }

    Connection connection() {
        return conn;
    }

    private Connection connect(String role) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", cfg.url.user());
        if (cfg.url.password() != null) {
            p.setProperty("password", cfg.url.password());
        }
        p.setProperty("ApplicationName", "riffle-bench-" + role);
        Connection c = DriverManager.getConnection(cfg.url.jdbcUrl(), p);
        c.setAutoCommit(true);
        return c;
    }

    /** Tries to make pgstattuple available; returns false (and remembers why) when it cannot. */
    boolean enablePgstattuple() {
        if (!cfg.pgstattuple) {
            pgstattupleNote = "n_dead_tup only (pgstattuple disabled by --no-pgstattuple)";
            return false;
        }
        try (Statement st = conn.createStatement()) {
            statements++;
            st.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple");
            pgstattuple = true;
            pgstattupleNote = "n_dead_tup (headline) and pgstattuple (dead tuples still present; scans each table)";
        } catch (SQLException e) {
            pgstattuple = false;
            pgstattupleNote = "n_dead_tup only (pgstattuple unavailable: "
                    + e.getMessage().lines().findFirst().orElse("") + ")";
        }
        return pgstattuple;
    }

    String pgstattupleNote() {
        return pgstattupleNote;
    }

    /**
     * Makes new sessions in the bench database record PL/pgSQL function statistics ({@code pg_stat_user_functions}):
     * {@code ALTER DATABASE … SET track_functions = 'pl'} when the database's sessions would not already track them
     * (superuser only). {@link #restoreTrackFunctions} puts the previous database setting back. Returns a note for
     * the JSON.
     */
    String enableTrackFunctions() {
        if (!cfg.trackFunctions) {
            return "off (--no-track-functions)";
        }
        String db = database();
        try (Statement st = conn.createStatement()) {
            statements++;
            try (ResultSet rs = st.executeQuery("SELECT current_setting('track_functions')")) {
                rs.next();
                String now = rs.getString(1);
                if ("pl".equals(now) || "all".equals(now)) {
                    return now + " (already on for sessions in database " + db + ")";
                }
            }
            String previous = null;
            statements++;
            try (ResultSet rs = st.executeQuery("SELECT s FROM pg_db_role_setting r"
                    + " JOIN pg_database d ON d.oid = r.setdatabase CROSS JOIN LATERAL unnest(r.setconfig) s"
                    + " WHERE r.setrole = 0 AND d.datname = current_database() AND s LIKE 'track\\_functions=%'")) {
                if (rs.next()) {
                    previous = rs.getString(1).substring("track_functions=".length());
                }
            }
            statements++;
            st.execute("ALTER DATABASE \"" + db + "\" SET track_functions = 'pl'");
            trackFunctionsRestore = previous == null ? "ALTER DATABASE \"" + db + "\" RESET track_functions"
                    : "ALTER DATABASE \"" + db + "\" SET track_functions = '" + previous + "'";
            return "pl (ALTER DATABASE " + db + " SET track_functions = 'pl' for this invocation; restored at the end"
                    + " with: " + trackFunctionsRestore + ")";
        } catch (SQLException e) {
            return "unavailable (" + e.getMessage().lines().findFirst().orElse("") + "): no per-function server time";
        }
    }

    /** Undoes {@link #enableTrackFunctions}; best effort. */
    void restoreTrackFunctions() {
        if (trackFunctionsRestore == null) {
            return;
        }
        try (Statement st = conn.createStatement()) {
            statements++;
            st.execute(trackFunctionsRestore);
            trackFunctionsRestore = null;
        } catch (SQLException e) {
            System.err.println("could not restore track_functions: " + e.getMessage() + " (run: " + trackFunctionsRestore
                    + ")");
        }
    }

    /** The database the harness is connected to. */
    String database() {
        return cfg.url.database();
    }

    /** The server-side CPU meter for this database (probes /proc once; one statement). */
    ServerCpu serverCpu() throws SQLException {
        statements++;
        return ServerCpu.probe(conn, cfg.url.user(), cfg.url.database());
    }

    /**
     * Counters at one moment: WAL position, the database's commit counter, the next xid, and the PL/pgSQL function
     * statistics ({@code pg_stat_user_functions}: calls, total and self time in ms) of the system's schema, which are
     * empty unless {@code track_functions} is on for the system's sessions.
     */
    record Snapshot(long nanos, long walLsn, long xactCommit, long nextXid, long harnessStatements,
                    Map<String, double[]> functions) {
        Map<String, Object> diff(Snapshot later) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("seconds", (later.nanos - nanos) / 1e9);
            m.put("wal_bytes", later.walLsn - walLsn);
            m.put("xact_commit", later.xactCommit - xactCommit);
            m.put("xids_assigned", later.nextXid - nextXid);
            m.put("harness_statements", later.harnessStatements - harnessStatements);
            Map<String, Object> fs = new LinkedHashMap<>();
            for (Map.Entry<String, double[]> e : later.functions.entrySet()) {
                double[] before = functions.getOrDefault(e.getKey(), new double[3]);
                double[] after = e.getValue();
                if (after[0] - before[0] <= 0) {
                    continue;
                }
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("calls", (long) (after[0] - before[0]));
                f.put("total_ms", after[1] - before[1]);
                f.put("self_ms", after[2] - before[2]);
                fs.put(e.getKey(), f);
            }
            m.put("functions", fs);
            return m;
        }
    }

    /** A snapshot without function statistics. */
    Snapshot snapshot() throws SQLException {
        return snapshot(null);
    }

    /** A snapshot, with the function statistics of {@code schema} when it is not null; one statement. */
    Snapshot snapshot(String schema) throws SQLException {
        statements++;
        try (PreparedStatement ps = conn.prepareStatement("SELECT pg_current_wal_lsn()::text,"
                     + " (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),"
                     + " pg_snapshot_xmax(pg_current_snapshot())::text,"
                     + " (SELECT string_agg(funcname || ' ' || calls || ' ' || total_time || ' ' || self_time, ',')"
                     + "    FROM pg_stat_user_functions WHERE schemaname = ?)")) {
            ps.setString(1, schema == null ? "" : schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Map<String, double[]> fs = new LinkedHashMap<>();
                String agg = rs.getString(4);
                if (agg != null) {
                    for (String f : agg.split(",")) {
                        String[] p = f.split(" ");
                        // overloads share a name; their numbers are added up
                        double[] v = fs.computeIfAbsent(p[0], k -> new double[3]);
                        v[0] += Double.parseDouble(p[1]);
                        v[1] += Double.parseDouble(p[2]);
                        v[2] += Double.parseDouble(p[3]);
                    }
                }
                return new Snapshot(System.nanoTime(), lsn(rs.getString(1)), rs.getLong(2),
                        Long.parseLong(rs.getString(3)), statements, fs);
            }
        }
    }

    static long lsn(String text) {
        int slash = text.indexOf('/');
        return (Long.parseLong(text.substring(0, slash), 16) << 32) | Long.parseLong(text.substring(slash + 1), 16);
    }

    /**
     * Dead tuples per table of the schema: {@code n_dead_tup} from the statistics (lags by up to a second or more) and,
     * when available, the exact {@code pgstattuple} count, which includes dead tuples that cannot be removed yet.
     */
    Map<String, Object> deadTuples(String schema) throws SQLException {
        Map<String, Object> tables = new LinkedHashMap<>();
        List<String[]> rels = new ArrayList<>();
        statements++;
        try (PreparedStatement ps = conn.prepareStatement(
                "SELECT c.relname, c.relkind::text, s.n_dead_tup, s.n_live_tup,"
                        + " coalesce(s.autovacuum_count, 0) + coalesce(s.vacuum_count, 0)"
                        + " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                        + " LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid"
                        + " WHERE n.nspname = ? AND c.relkind IN ('r', 'p') ORDER BY c.relname")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rels.add(new String[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getString(5)});
                }
            }
        }
        long statTotal = 0;
        long exactTotal = 0;
        boolean exactComplete = pgstattuple;
        for (String[] r : rels) {
            if (r[0].equals("flyway_schema_history")) {
                continue;
            }
            Map<String, Object> t = new LinkedHashMap<>();
            boolean partitioned = r[1].equals("p");
            if (partitioned) {
                t.put("partitioned_parent", true);
                tables.put(r[0], t);
                continue;
            }
            long dead = r[2] == null ? 0 : Long.parseLong(r[2]);
            t.put("n_dead_tup", dead);
            t.put("n_live_tup", r[3] == null ? 0 : Long.parseLong(r[3]));
            t.put("vacuums", Long.parseLong(r[4]));
            statTotal += dead;
            if (pgstattuple) {
                statements++;
                try (PreparedStatement ps = conn.prepareStatement(
                        "SELECT dead_tuple_count, tuple_count, table_len FROM pgstattuple(?::regclass)")) {
                    ps.setString(1, "\"" + schema + "\".\"" + r[0] + "\"");
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        t.put("dead_exact", rs.getLong(1));
                        t.put("live_exact", rs.getLong(2));
                        t.put("table_bytes", rs.getLong(3));
                        exactTotal += rs.getLong(1);
                    }
                } catch (SQLException e) {
                    t.put("dead_exact", null);
                    t.put("dead_exact_error", e.getMessage().lines().findFirst().orElse(""));
                    exactComplete = false;
                }
            }
            tables.put(r[0], t);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("n_dead_tup_total", statTotal);
        m.put("dead_exact_total", pgstattuple && exactComplete ? exactTotal : null);
        m.put("tables", tables);
        return m;
    }

    /** Opens the pinning session: {@code BEGIN; SELECT txid_current();} and leaves it idle in transaction. */
    long pinXmin() throws SQLException {
        pin = connect("pin");
        pin.setAutoCommit(false);
        try (Statement st = pin.createStatement(); ResultSet rs = st.executeQuery("SELECT txid_current()")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Ends the pinning session (rollback), releasing the xmin horizon. */
    void releasePin() throws SQLException {
        if (pin != null) {
            try {
                pin.rollback();
            } finally {
                pin.close();
                pin = null;
            }
        }
    }

    /** Whether the pinning session is still idle in transaction and holds the oldest xmin horizon. */
    Map<String, Object> pinState() throws SQLException {
        statements++;
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT state, backend_xid::text, age(backend_xid)"
                     + " FROM pg_stat_activity WHERE application_name = 'riffle-bench-pin'")) {
            Map<String, Object> m = new LinkedHashMap<>();
            if (rs.next()) {
                m.put("state", rs.getString(1));
                m.put("backend_xid", rs.getString(2));
                m.put("xid_age", rs.getLong(3));
            }
            return m;
        }
    }

    Map<String, Object> serverFacts() throws SQLException {
        Map<String, Object> m = new LinkedHashMap<>();
        statements++;
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery("SELECT version(), current_setting('server_version'),"
                     + " current_setting('synchronous_commit'), current_setting('fsync'),"
                     + " current_setting('full_page_writes'), current_setting('shared_buffers'),"
                     + " current_setting('max_wal_size'), current_setting('autovacuum'),"
                     + " current_setting('autovacuum_naptime'), current_setting('wal_level'),"
                     + " current_database(), (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')")) {
            rs.next();
            m.put("version", rs.getString(1));
            m.put("server_version", rs.getString(2));
            m.put("synchronous_commit", rs.getString(3));
            m.put("fsync", rs.getString(4));
            m.put("full_page_writes", rs.getString(5));
            m.put("shared_buffers", rs.getString(6));
            m.put("max_wal_size", rs.getString(7));
            m.put("autovacuum", rs.getString(8));
            m.put("autovacuum_naptime", rs.getString(9));
            m.put("wal_level", rs.getString(10));
            m.put("database", rs.getString(11));
            m.put("client_backends_at_start", rs.getLong(12));
        }
        return m;
    }

    @Override
    public void close() throws SQLException {
        try {
            restoreTrackFunctions();
            releasePin();
        } finally {
            conn.close();
        }
    }
}
