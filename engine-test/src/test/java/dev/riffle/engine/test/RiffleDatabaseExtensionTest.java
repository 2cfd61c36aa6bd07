package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.migrations.RiffleMigrations;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The extension end to end against a real server. The nested classes record their schemas, and the outer
 * {@code @AfterAll} (which JUnit runs after every nested class has finished and been torn down) checks that they were
 * all different and that the nested ones were dropped.
 */
@RiffleTest
class RiffleDatabaseExtensionTest {

    private static final Map<String, String> SCHEMAS = new ConcurrentHashMap<>();
    private static TestDatabase outer;

    @BeforeAll
    static void rememberOuterSchema(TestDatabase db) {
        outer = db;
        SCHEMAS.put("outer", db.schema());
    }

    @AfterAll
    static void everyClassHadItsOwnSchemaAndNestedOnesAreGone() {
        assertThat(SCHEMAS).containsKeys("outer", "first", "second", "perClass", "customSlots");
        assertThat(new HashSet<>(SCHEMAS.values())).hasSameSizeAs(SCHEMAS.values());
        if (!RiffleDatabaseExtension.keepSchema(System.getenv())) {
            SCHEMAS.forEach((owner, schema) -> assertThat(schemaExists(outer, schema))
                    .as("schema of %s (%s) exists", owner, schema)
                    .isEqualTo(owner.equals("outer")));
        }
    }

    @Test
    void schemaExistsAndWasMigrated(TestDatabase db) {
        assertThat(db).isSameAs(outer);
        assertThat(schemaExists(db, db.schema())).isTrue();
        assertThat(db.queryLong("SELECT count(*) FROM information_schema.tables "
                + "WHERE table_schema = ? AND table_name = 'flyway_schema_history'", db.schema())).isEqualTo(1);
        // Unqualified: resolves through the helpers' search_path.
        assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE success")).isPositive();
    }

    @Test
    void schemaIsNamedAfterTheClass(TestDatabase db) {
        assertThat(db.schema()).matches("rt_riffle_database_extension_test_[a-z0-9]{6}").hasSizeLessThanOrEqualTo(63);
    }

    @Test
    void defaultSlotCounts(TestDatabase db) {
        assertThat(db.settings()).isEqualTo(RiffleMigrations.Settings.of(db.schema()));
    }

    @Test
    void openJdbcUsesTheSchema(TestDatabase db) throws Exception {
        try (Connection c = db.openJdbc(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT current_schema(), current_setting('search_path')")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo(db.schema());
            assertThat(rs.getString(2)).isEqualTo(db.schema());
            assertThat(c.getAutoCommit()).isTrue();
        }
    }

    @Test
    void helpersRoundTrip(TestDatabase db) {
        assertThat(db.execute("CREATE TABLE helper_probe (id bigint PRIMARY KEY, tags text[], doc jsonb, at timestamptz)"))
                .isZero();
        Instant at = Instant.parse("2026-01-02T03:04:05Z");
        assertThat(db.execute("INSERT INTO helper_probe VALUES (?, ?::text[], ?::jsonb, ?), (2, NULL, NULL, NULL)",
                1L, "{a,b}", "{\"k\": 1}", at)).isEqualTo(2);

        List<Map<String, Object>> rows = db.queryRows("SELECT id, tags, doc, at = ? AS same_instant FROM helper_probe "
                + "ORDER BY id", at);

        assertThat(rows).hasSize(2);
        assertThat(rows.get(0)).containsExactly(
                Map.entry("id", 1L), Map.entry("tags", List.of("a", "b")), Map.entry("doc", "{\"k\": 1}"),
                Map.entry("same_instant", true));
        assertThat(rows.get(1)).containsEntry("tags", null).containsEntry("doc", null);
        assertThat(db.queryLong("SELECT count(*) FROM helper_probe")).isEqualTo(2);
        assertThat(db.execute("SELECT pg_notify('riffle_test_probe', 'x')")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".helper_probe WHERE id > ?", 1)).isEqualTo(1);
    }

    @Test
    void helperFailuresCarryTheSqlState(TestDatabase db) {
        assertThatThrownBy(() -> db.queryLong("SELECT count(*) FROM no_such_table"))
                .isInstanceOf(TestDatabase.TestDatabaseException.class)
                .hasMessageContaining("no_such_table")
                .satisfies(e -> assertThat(((TestDatabase.TestDatabaseException) e).sqlState()).isEqualTo("42P01"));
        assertThatThrownBy(() -> db.queryLong("SELECT 1, 2")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> db.queryLong("SELECT NULL::int")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> db.queryLong("SELECT 1 FROM generate_series(1, 2)"))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> db.queryRows("SELECT 1 AS x, 2 AS x")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'x'");
    }

    @Nested
    class First {
        @Test
        void hasItsOwnMigratedSchema(TestDatabase db) {
            SCHEMAS.put("first", db.schema());
            assertThat(db.schema()).isNotEqualTo(outer.schema()).startsWith("rt_first_");
            assertThat(schemaExists(db, db.schema())).isTrue();
            assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE success")).isPositive();
        }
    }

    @Nested
    class Second {
        @Test
        void hasItsOwnMigratedSchema(TestDatabase db) {
            SCHEMAS.put("second", db.schema());
            assertThat(db.schema()).isNotEqualTo(outer.schema()).startsWith("rt_second_");
            assertThat(schemaExists(db, db.schema())).isTrue();
        }

        @Test
        void tablesOfOtherClassesAreNotVisible(TestDatabase db) {
            db.execute("CREATE TABLE only_in_second (x int)");
            assertThat(outer.queryLong("SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_in_second' "
                    + "AND table_schema = ?", outer.schema())).isZero();
        }
    }

    /** JUnit builds PER_CLASS instances before before-all callbacks, so the schema must be created on demand. */
    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class PerClassConstructorInjection {
        private final TestDatabase fromConstructor;

        PerClassConstructorInjection(TestDatabase db) {
            this.fromConstructor = db;
        }

        @Test
        void constructorAndMethodShareTheSchema(TestDatabase db) {
            SCHEMAS.put("perClass", db.schema());
            assertThat(db).isSameAs(fromConstructor);
            assertThat(schemaExists(db, db.schema())).isTrue();
        }
    }

    @Nested
    @RiffleTest(queueSlots = 4, leaseSlots = 2, claimSlots = 2)
    class CustomSlots {
        @Test
        void annotationSettingsAreUsed(TestDatabase db) {
            SCHEMAS.put("customSlots", db.schema());
            assertThat(db.settings()).isEqualTo(new RiffleMigrations.Settings(db.schema(), 4, 2, 2));
        }
    }

    private static boolean schemaExists(TestDatabase via, String schema) {
        return via.queryLong("SELECT count(*) FROM pg_namespace WHERE nspname = ?", schema) == 1;
    }
}
