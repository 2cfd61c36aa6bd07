package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.PgFaults;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server-side fault helpers do what the scenarios rely on, on the shared server: a terminated session is
 * really gone, a held xid really shows as an idle-in-transaction holder, and a held ACCESS SHARE lock really makes
 * a TRUNCATE with a short {@code lock_timeout} fail with {@code 55P03} (the S28 mechanism) until it is released.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(60)
@RiffleTest
class PgFaultsIT {

    @Test
    void terminateEndsExactlyTheMatchingSessions(TestDatabase db) throws SQLException {
        String app = Fixtures.appName("pgfaults");
        try (Connection victim = connect(db, app + ".victim"); Connection bystander = connect(db, app + "x.bystander")) {
            assertThat(PgFaults.backendStates(db.url(), app + ".%")).hasSize(1);

            assertThat(PgFaults.terminate(db.url(), app + ".%")).isEqualTo(1);

            assertThatThrownBy(() -> selectOne(victim)).isInstanceOf(SQLException.class);
            selectOne(bystander);
            assertThat(Fixtures.await(() -> PgFaults.backendStates(db.url(), app + ".%").isEmpty(),
                    java.time.Duration.ofSeconds(5))).isTrue();
        }
    }

    @Test
    void terminateCanSpareIdleSessions(TestDatabase db) throws SQLException {
        String app = Fixtures.appName("pgfaults");
        try (Connection idle = connect(db, app + ".idle")) {
            assertThat(PgFaults.terminate(db.url(), app + ".%", List.of("active", "idle in transaction"))).isZero();
            selectOne(idle);
        }
    }

    @Test
    void holdXidKeepsAnIdleInTransactionSessionWithAnXid(TestDatabase db) {
        int pid;
        try (PgFaults.Hold hold = PgFaults.holdXid(db.url())) {
            pid = hold.backendPid();
            assertThat(hold.xid()).isPositive();
            assertThat(db.queryRows("SELECT state, backend_xid IS NOT NULL AS has_xid FROM pg_stat_activity WHERE pid = ?", pid))
                    .containsExactly(java.util.Map.of("state", "idle in transaction", "has_xid", true));
        }
        assertThat(Fixtures.await(() -> db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid) == 0,
                java.time.Duration.ofSeconds(5))).as("closing the hold ends the session").isTrue();
    }

    @Test
    void holdAccessShareBlocksTruncateUntilReleased(TestDatabase db) {
        db.execute("CREATE TABLE lock_target (i int)");
        String truncate = "BEGIN; SET LOCAL lock_timeout = '100ms'; TRUNCATE lock_target; COMMIT";
        try (PgFaults.Hold hold = PgFaults.holdAccessShare(db.url(), db.schema() + ".lock_target")) {
            assertThatThrownBy(() -> db.execute(truncate))
                    .isInstanceOfSatisfying(TestDatabase.TestDatabaseException.class,
                            e -> assertThat(e.sqlState()).isEqualTo("55P03"));
            assertThat(hold.xid()).isEqualTo(-1);
        }
        db.execute(truncate);
    }

    private static Connection connect(TestDatabase db, String applicationName) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", db.url().user());
        if (db.url().password() != null) {
            props.setProperty("password", db.url().password());
        }
        props.setProperty("ApplicationName", applicationName);
        return DriverManager.getConnection(db.url().jdbcUrl(), props);
    }

    private static void selectOne(Connection c) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("SELECT 1");
        }
    }
}
