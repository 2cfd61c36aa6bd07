package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Leader failover: terminating the leader's connection hands leadership over and maintenance continues. */
@RiffleTest
class LeaderFailoverIT {

    private static Riffle campaigning(TestDatabase db) {
        return Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(4)
                .maintenance(MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200)).leaderPing(Duration.ofMillis(200))
                        .promotionInterval(Duration.ofMillis(100)).build())
                .build()).block(Fixtures.TIMEOUT);
    }

    @Test
    void anotherInstanceTakesOverWithinBoundedTime(TestDatabase db) {
        Riffle a = campaigning(db);
        Riffle b = campaigning(db);
        try {
            Fixtures.await("one leader", () -> a.maintenance().isLeader() ^ b.maintenance().isLeader());
            Riffle leader = a.maintenance().isLeader() ? a : b;
            Riffle follower = leader == a ? b : a;
            int pid = leader.maintenance().leaderBackendPid().block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = ? AND granted", pid))
                    .isEqualTo(1);

            long t0 = System.nanoTime();
            assertThat(db.queryLong("SELECT count(*) FROM (SELECT pg_terminate_backend(?)) t", pid)).isEqualTo(1);
            // A new term, not just "someone is leader": until the old leader notices its session is gone it still
            // reports itself leader, and that must not count as a takeover.
            Fixtures.await("a leader again, in a new term", () -> (a.maintenance().isLeader() || b.maintenance().isLeader())
                    && a.maintenance().leaderTerms() + b.maintenance().leaderTerms() >= 2);
            Duration took = Duration.ofNanos(System.nanoTime() - t0);
            assertThat(took).isLessThan(Duration.ofSeconds(10));
            // Exactly one holder of the lock in the database.
            Fixtures.await("single lock holder", () -> db.queryLong(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid WHERE l.locktype = 'advisory' "
                            + "AND l.granted AND s.application_name LIKE 'riffle.%'") == 1);
            assertThat(a.maintenance().leaderTerms() + b.maintenance().leaderTerms()).isGreaterThanOrEqualTo(2);

            // Maintenance continues: a scheduled job is promoted by whoever leads now, without a manual pass.
            List<Long> ids = a.client().enqueueMany(List.of(NewJob.builder("k").queue("fo")
                    .runAt(Instant.now().plusMillis(300)).build())).block(Fixtures.TIMEOUT);
            Fixtures.await("promoted", () -> db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", ids.get(0)) == 1);
            assertThat(follower).isNotNull();
        } finally {
            Fixtures.close(a, b);
        }
    }
}
