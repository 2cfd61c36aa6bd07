package dev.riffle.engine.outcomes;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.postgresql.util.PGobject;

/**
 * Assertion queries over one JDBC connection held for a whole test. The outcome tests poll the database a lot, and
 * on a loaded two-core machine a fresh connection per probe (what {@link TestDatabase}'s helpers do) costs more than
 * the engine work being observed. The connection is autocommit, so no probe holds a snapshot or a lock between
 * statements. JUnit threads only.
 */
final class Probe implements AutoCloseable {

    private final TestDatabase database;
    private final Connection connection;

    private Probe(TestDatabase database, Connection connection) {
        this.database = database;
        this.connection = connection;
    }

    static Probe open(TestDatabase database) {
        try {
            return new Probe(database, database.openJdbc());
        } catch (SQLException e) {
            throw new IllegalStateException("cannot open a probe connection to " + database, e);
        }
    }

    DatabaseUrl url() {
        return database.url();
    }

    String schema() {
        return database.schema();
    }

    /** The per-call helpers, for assertions on the SQLSTATE of a failing statement. */
    TestDatabase database() {
        return database;
    }

    long queryLong(String sql, Object... params) {
        List<Map<String, Object>> rows = queryRows(sql, params);
        if (rows.size() != 1 || rows.get(0).size() != 1) {
            throw new IllegalStateException("expected one row of one column, got " + rows + ": " + sql);
        }
        Object v = rows.get(0).values().iterator().next();
        if (!(v instanceof Number n)) {
            throw new IllegalStateException("expected a number, got " + v + ": " + sql);
        }
        return n.longValue();
    }

    List<Map<String, Object>> queryRows(String sql, Object... params) {
        try (PreparedStatement ps = prepare(sql, params); ResultSet rs = ps.executeQuery()) {
            int columns = rs.getMetaData().getColumnCount();
            List<Map<String, Object>> rows = new ArrayList<>();
            while (rs.next()) {
                Map<String, Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= columns; i++) {
                    String label = rs.getMetaData().getColumnLabel(i);
                    if (row.containsKey(label)) {
                        throw new IllegalArgumentException("duplicate column label " + label + ": " + sql);
                    }
                    row.put(label, simple(rs.getObject(i)));
                }
                rows.add(row);
            }
            return rows;
        } catch (SQLException e) {
            throw new IllegalStateException("[" + e.getSQLState() + "] " + e.getMessage() + "\n  statement: " + sql, e);
        }
    }

    int execute(String sql, Object... params) {
        try (PreparedStatement ps = prepare(sql, params)) {
            return ps.execute() ? 0 : Math.max(0, ps.getUpdateCount());
        } catch (SQLException e) {
            throw new IllegalStateException("[" + e.getSQLState() + "] " + e.getMessage() + "\n  statement: " + sql, e);
        }
    }

    private PreparedStatement prepare(String sql, Object... params) throws SQLException {
        PreparedStatement ps = connection.prepareStatement(sql);
        for (int i = 0; i < params.length; i++) {
            Object p = params[i];
            ps.setObject(i + 1, p instanceof Instant t ? t.atOffset(ZoneOffset.UTC) : p);
        }
        return ps;
    }

    // Values that compare with equals() in assertions: SQL arrays as lists, jsonb and other driver types as text.
    private static Object simple(Object v) throws SQLException {
        if (v instanceof Array a) {
            try {
                return Arrays.asList((Object[]) a.getArray());
            } finally {
                a.free();
            }
        }
        return v instanceof PGobject pg ? pg.getValue() : v;
    }

    @Override
    public void close() {
        try {
            connection.close();
        } catch (SQLException e) {
            // The connection is only ours; a failure to close it changes no test outcome.
        }
    }
}
