package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * {@code Maintenance.leaderPresent()}: true while any engine on the schema holds the leader lock (seen from an engine
 * that does not campaign itself), false when none does, and never true for another schema's leader.
 */
@RiffleTest
class LeaderPresentIT {

    private static Riffle start(TestDatabase db, boolean campaigning) {
        return Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(2)
                .maintenance(MaintenanceConfig.builder().enabled(campaigning).leaderRetry(Duration.ofMillis(200))
                        .leaderPing(Duration.ofMillis(200)).build())
                .build()).block(Fixtures.TIMEOUT);
    }

    @Test
    void seesAnotherEnginesLeadershipAndItsEnd(TestDatabase db) throws Exception {
        Riffle observer = start(db, false);
        Riffle leader = null;
        try {
            assertThat(observer.maintenance().leaderPresent().block(Fixtures.TIMEOUT)).isFalse();
            // Another schema's leader lock is a different key: it must not count (held on a session kept open).
            try (java.sql.Connection other = db.openJdbc(); java.sql.Statement st = other.createStatement()) {
                st.execute("SELECT pg_advisory_lock(hashtextextended('\"some_other_schema\"' || '.maintenance', 0))");
                assertThat(observer.maintenance().leaderPresent().block(Fixtures.TIMEOUT)).isFalse();
            }

            leader = start(db, true);
            Riffle l = leader;
            Fixtures.await("a leader", () -> l.maintenance().isLeader());
            assertThat(observer.maintenance().isLeader()).isFalse();
            assertThat(observer.maintenance().leaderPresent().block(Fixtures.TIMEOUT)).isTrue();
            assertThat(leader.maintenance().leaderPresent().block(Fixtures.TIMEOUT)).isTrue();

            Fixtures.close(leader);
            leader = null;
            Fixtures.await("no leader", () -> !observer.maintenance().leaderPresent().block(Fixtures.TIMEOUT));
        } finally {
            Fixtures.close(observer, leader);
        }
    }
}
