package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.SchemaNotReadyException;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import org.junit.jupiter.api.Test;

/** The destructive-upgrade guard: an empty legacy frontier table is dropped; a non-empty one refuses startup. */
@RiffleTest
class UpgradeGuardIT {

    @Test
    void emptyLegacyTableIsDroppedAndNonEmptyRefusesStartupUntouched(TestDatabase db) {
        db.execute("CREATE TABLE open_receipt_claims (job_id bigint, run_lease bigint)");
        db.execute("INSERT INTO open_receipt_claims VALUES (1, 1), (2, 1), (3, 1)");
        assertThatThrownBy(() -> Fixtures.manual(db))
                .isInstanceOf(SchemaNotReadyException.class)
                .hasMessageContaining("open_receipt_claims")
                .hasMessageContaining("3 rows");
        assertThat(db.queryLong("SELECT count(*) FROM open_receipt_claims")).isEqualTo(3);

        db.execute("DELETE FROM open_receipt_claims");
        Riffle riffle = Fixtures.manual(db);
        try {
            assertThat(db.queryLong("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    + "WHERE n.nspname = ? AND c.relname = 'open_receipt_claims'", db.schema())).isZero();
        } finally {
            Fixtures.close(riffle);
        }
    }
}
