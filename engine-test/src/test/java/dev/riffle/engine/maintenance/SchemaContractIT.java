package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.SchemaNotReadyException;
import dev.riffle.engine.internal.sql.SchemaContract;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.migrations.RiffleMigrations;
import org.junit.jupiter.api.Test;

/**
 * The schema layout of docs/adr/0007 at run time: migrating an up-to-date schema again applies nothing (the
 * repeatable function files are not re-run while unchanged), and the engine refuses to start on a schema whose
 * function contract version is not the one it supports.
 */
@RiffleTest
class SchemaContractIT {

    @Test
    void migratingAMigratedSchemaAgainIsANoOp(TestDatabase db) {
        long history = db.queryLong("SELECT count(*) FROM flyway_schema_history");
        long versioned = db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE version IS NOT NULL AND success");
        long repeatable = db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE version IS NULL AND success");
        // V1, V2__enqueue_shards, V3__fewer_ring_indexes and V4__queue_backoff, each applied once and successfully.
        assertThat(versioned).isEqualTo(4)
                .isEqualTo(db.queryLong("SELECT count(DISTINCT version) FROM flyway_schema_history WHERE version IS NOT NULL"));
        assertThat(repeatable).isGreaterThanOrEqualTo(10);

        DatabaseUrl url = db.url();
        RiffleMigrations.Result again = RiffleMigrations.migrate(url.jdbcUrl(), url.user(),
                url.password() == null ? "" : url.password(), db.settings());
        assertThat(again.migrationsExecuted()).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history")).isEqualTo(history);
        assertThat(db.queryLong("SELECT " + qualified(db) + ".contract_version()")).isEqualTo(SchemaContract.VERSION);
    }

    @Test
    void startupRefusesAnotherContractVersionAndAMissingOne(TestDatabase db) {
        try {
            setContract(db, SchemaContract.VERSION + 1);
            assertThatThrownBy(() -> Fixtures.manual(db))
                    .isInstanceOf(SchemaNotReadyException.class)
                    .hasMessageContaining("contract version " + (SchemaContract.VERSION + 1))
                    .hasMessageContaining("needs contract version " + SchemaContract.VERSION)
                    .hasMessageContaining("newer Riffle");

            setContract(db, SchemaContract.VERSION - 1);
            assertThatThrownBy(() -> Fixtures.manual(db))
                    .isInstanceOf(SchemaNotReadyException.class)
                    .hasMessageContaining("contract version " + (SchemaContract.VERSION - 1))
                    .hasMessageContaining("RiffleMigrations");

            db.execute("DROP FUNCTION " + qualified(db) + ".contract_version()");
            assertThatThrownBy(() -> Fixtures.manual(db))
                    .isInstanceOf(SchemaNotReadyException.class)
                    .hasMessageContaining("is not migrated")
                    .hasMessageContaining("contract_version()");
        } finally {
            setContract(db, SchemaContract.VERSION);
        }
        Fixtures.close(Fixtures.manual(db));
    }

    private static String qualified(TestDatabase db) {
        return "\"" + db.schema() + "\"";
    }

    private static void setContract(TestDatabase db, int version) {
        db.execute("CREATE OR REPLACE FUNCTION " + qualified(db) + ".contract_version() RETURNS int "
                + "LANGUAGE sql IMMUTABLE AS 'SELECT " + version + "'");
    }
}
