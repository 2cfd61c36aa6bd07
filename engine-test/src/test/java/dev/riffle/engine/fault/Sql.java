package dev.riffle.engine.fault;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.test.fault.PgFaults;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Blocking JDBC one-liners for tests on a {@code PgCluster}, where there is no {@code TestDatabase}. Each call uses
 * its own autocommit connection with {@code search_path} set to the schema (or left alone when it is null).
 */
final class Sql {
    private Sql() {}

    static long queryLong(DatabaseUrl url, String schema, String sql, Object... params) {
        List<Map<String, Object>> rows = queryRows(url, schema, sql, params);
        if (rows.size() != 1 || rows.get(0).size() != 1) {
            throw new IllegalStateException("expected one row with one column: " + sql + " got " + rows);
        }
        return ((Number) rows.get(0).values().iterator().next()).longValue();
    }

    static List<Map<String, Object>> queryRows(DatabaseUrl url, String schema, String sql, Object... params) {
        try (Connection c = open(url, schema); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                        row.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                    }
                    rows.add(row);
                }
            }
            return rows;
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed [" + e.getSQLState() + "]: " + sql, e);
        }
    }

    static void execute(DatabaseUrl url, String schema, String sql) {
        try (Connection c = open(url, schema); Statement st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed [" + e.getSQLState() + "]: " + sql, e);
        }
    }

    private static Connection open(DatabaseUrl url, String schema) throws SQLException {
        Connection c = PgFaults.open(url);
        if (schema != null) {
            try (Statement st = c.createStatement()) {
                st.execute("SET search_path TO \"" + schema + "\", public");
            } catch (SQLException e) {
                c.close();
                throw e;
            }
        }
        return c;
    }
}
