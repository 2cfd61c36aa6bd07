package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.migrations.RiffleMigrations;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.postgresql.util.PGobject;

/**
 * The migrated schema a {@link RiffleTest} class works in, plus blocking JDBC helpers for assertions.
 *
 * <p>Inject it into test methods, constructors or {@code @BeforeAll}/{@code @BeforeEach} methods. Point the code under
 * test at {@link #url()} and {@link #schema()}; check its effects with {@link #queryLong}, {@link #queryRows} and
 * {@link #execute}. Those helpers block, which is fine on JUnit's test threads (BlockHound only polices Reactor's
 * non-blocking threads); never call them from inside a reactive pipeline.
 *
 * <p>Each helper call opens and closes its own autocommit connection with {@code search_path} set to {@link #schema()},
 * so unqualified table names resolve to this class's schema, nothing holds locks or snapshots between calls, and the
 * helpers stay usable after a test terminates backends. Instances are thread-safe.
 */
public final class TestDatabase {

    private final DatabaseUrl url;
    private final RiffleMigrations.Settings settings;

    TestDatabase(DatabaseUrl url, RiffleMigrations.Settings settings) {
        this.url = url;
        this.settings = settings;
    }

    /** The server and database holding {@link #schema()}; hand this to the engine under test. */
    public DatabaseUrl url() {
        return url;
    }

    /** The schema created and migrated for this test class, e.g. {@code rt_my_queue_test_k3x9qa}. */
    public String schema() {
        return settings.schema();
    }

    /** The settings the schema was migrated with (schema name and ring slot counts from {@link RiffleTest}). */
    public RiffleMigrations.Settings settings() {
        return settings;
    }

    /**
     * Opens a new autocommit JDBC connection whose {@code search_path} is {@link #schema()}. The caller closes it.
     *
     * @throws SQLException when the server cannot be reached
     */
    public Connection openJdbc() throws SQLException {
        Connection c = Jdbc.connect(url);
        try (Statement st = c.createStatement()) {
            st.execute("SET search_path TO " + Jdbc.quote(schema()));
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /**
     * Runs a query that returns one row with one numeric column, e.g. {@code SELECT count(*) FROM jobs WHERE state = ?}.
     *
     * @param sql the query, with {@code ?} placeholders
     * @param params bound in order to {@code ?} placeholders
     * @throws IllegalStateException when there is not exactly one row, or the value is NULL or not a number
     * @throws TestDatabaseException when the statement fails
     */
    public long queryLong(String sql, Object... params) {
        try (Connection c = openJdbc(); PreparedStatement ps = prepare(c, sql, params); ResultSet rs = ps.executeQuery()) {
            int columns = rs.getMetaData().getColumnCount();
            if (columns != 1) {
                throw new IllegalStateException("expected exactly one column but got " + columns + ": " + sql);
            }
            if (!rs.next()) {
                throw new IllegalStateException("expected exactly one row but got none: " + sql);
            }
            Object value = rs.getObject(1);
            if (rs.next()) {
                throw new IllegalStateException("expected exactly one row but got more: " + sql);
            }
            if (value instanceof Number n) {
                return n.longValue();
            }
            throw new IllegalStateException("expected a number but got "
                    + (value == null ? "NULL" : value.getClass().getName() + " " + value) + ": " + sql);
        } catch (SQLException e) {
            throw new TestDatabaseException(sql, e);
        }
    }

    /**
     * Runs a query and returns all rows, each as a column-label-to-value map in select-list order.
     *
     * <p>Column labels must be unique (alias duplicates). Values are what pgjdbc returns, except that SQL arrays become {@link List}s and {@code json}/{@code jsonb} and
     * other driver-specific objects become their text, so rows compare with plain {@code equals} in assertions.
     *
     * @param sql the query, with {@code ?} placeholders
     * @param params bound in order to {@code ?} placeholders; {@link Instant}s are sent as UTC timestamps
     * @throws TestDatabaseException when the statement fails
     * @throws IllegalArgumentException when two columns share a label
     */
    public List<Map<String, @Nullable Object>> queryRows(String sql, Object... params) {
        try (Connection c = openJdbc(); PreparedStatement ps = prepare(c, sql, params); ResultSet rs = ps.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            List<Map<String, @Nullable Object>> rows = new ArrayList<>();
            while (rs.next()) {
                Map<String, @Nullable Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    String label = md.getColumnLabel(i);
                    if (row.containsKey(label)) {
                        // A map would silently keep only one of them, and an assertion would check the wrong value.
                        throw new IllegalArgumentException("column label '" + label + "' appears twice; alias the "
                                + "columns (SELECT a.id AS a_id, ...): " + sql);
                    }
                    row.put(label, plain(rs.getObject(i)));
                }
                rows.add(row);
            }
            return rows;
        } catch (SQLException e) {
            throw new TestDatabaseException(sql, e);
        }
    }

    /**
     * Runs one statement (DML, DDL, or a SELECT used for its side effect such as {@code pg_notify}).
     *
     * @param sql the statement, with {@code ?} placeholders
     * @param params bound in order to {@code ?} placeholders
     * @return the number of rows affected, or 0 for statements that return rows or count nothing
     * @throws TestDatabaseException when the statement fails
     */
    public int execute(String sql, Object... params) {
        try (Connection c = openJdbc(); PreparedStatement ps = prepare(c, sql, params)) {
            boolean returnedRows = ps.execute();
            return returnedRows ? 0 : Math.max(0, ps.getUpdateCount());
        } catch (SQLException e) {
            throw new TestDatabaseException(sql, e);
        }
    }

    @Override
    public String toString() {
        return "TestDatabase[" + url.r2dbcUrl() + ", schema " + schema() + "]";
    }

    private static PreparedStatement prepare(Connection c, String sql, Object... params) throws SQLException {
        PreparedStatement ps = c.prepareStatement(sql);
        try {
            for (int i = 0; i < params.length; i++) {
                Object p = params[i];
                // pgjdbc has no Instant mapping; OffsetDateTime is its timestamptz type.
                ps.setObject(i + 1, p instanceof Instant instant ? instant.atOffset(ZoneOffset.UTC) : p);
            }
            return ps;
        } catch (SQLException | RuntimeException e) {
            ps.close();
            throw e;
        }
    }

    private static @Nullable Object plain(@Nullable Object value) throws SQLException {
        if (value instanceof Array array) {
            try {
                return plain(array.getArray());
            } finally {
                array.free();
            }
        }
        if (value instanceof Object[] elements) {
            // Multi-dimensional SQL arrays arrive as nested Java arrays; lists all the way down keep equals() useful.
            List<@Nullable Object> list = new ArrayList<>(elements.length);
            for (Object e : elements) {
                list.add(plain(e));
            }
            return list;
        }
        if (value instanceof PGobject pg) {
            return pg.getValue();
        }
        return value;
    }

    /** An SQL failure in a {@link TestDatabase} helper, carrying the statement and the SQLSTATE for assertions. */
    public static final class TestDatabaseException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** Copied out of the cause so assertions can check it without casting to {@link SQLException}. */
        private final @Nullable String sqlState;

        TestDatabaseException(String sql, SQLException cause) {
            super("SQL failed [" + cause.getSQLState() + "] " + cause.getMessage() + "\n  statement: " + sql, cause);
            this.sqlState = cause.getSQLState();
        }

        /** The SQLSTATE of the failure (e.g. {@code 23505} for a unique violation), or null when the driver gave none. */
        public @Nullable String sqlState() {
            return sqlState;
        }
    }
}
