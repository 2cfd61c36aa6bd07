package dev.riffle.engine.cron;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.CronFire;
import dev.riffle.engine.api.CronSchedule;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.ManualRiffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestKit;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Exactly one enqueue per fire time: two callers of {@code cron_fire} for the same fire (two leaders overlapping),
 * two engines evaluating the same schedules at the same instants, and a leader failover in the middle. Jobs are
 * counted in the database.
 */
@RiffleTest
class CronRaceIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(15);
    private static final String FIRE = "SELECT count(*) FROM cron_fire('race', 1, NULL, "
            + "ARRAY['2030-01-01T00:00:10Z']::timestamptz[])";

    /**
     * The interleaving that matters, made deterministic: leader A has enqueued the fire and moved the last fire but
     * not committed; leader B, which read the same row, sends the same fire and waits on A's row lock. When A
     * commits, B's compare-and-set re-checks against A's row and enqueues nothing.
     */
    @Test
    void twoCallersOfTheFireFunctionForTheSameFireTimeEnqueueOneJob(TestDatabase db) throws Exception {
        db.queryLong("SELECT count(*) FROM cron_upsert('race', '*/10 * * * * *', 'UTC', 'race', 'cron-race', '{}', "
                + "2::smallint, 3::smallint, 1, '2030-01-01T00:00:00Z')");
        try (Connection a = db.openJdbc(); Connection b = db.openJdbc()) {
            a.setAutoCommit(false);
            assertThat(count(a, FIRE)).as("A fires").isEqualTo(1);
            CompletableFuture<Long> second = CompletableFuture.supplyAsync(() -> {
                try {
                    return count(b, FIRE);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Await.until("B waits on A's row lock", TIMEOUT, () -> db.queryLong("SELECT count(*) FROM pg_stat_activity "
                    + "WHERE wait_event_type = 'Lock' AND query LIKE '%cron_fire(''race''%'") == 1);
            assertThat(second).isNotDone();
            a.commit();
            assertThat(second.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("B's compare-and-set lost").isZero();
        }
        assertThat(jobs(db, "cron-race")).isEqualTo(1);
        assertThat(db.queryLong("SELECT count(*) FROM cron_schedules WHERE name = 'race' "
                + "AND last_fire_at = '2030-01-01T00:00:10Z'")).isEqualTo(1);
        // A late caller with the row it read before the fire (stale last fire) enqueues nothing either.
        assertThat(db.queryLong(FIRE)).isZero();
        assertThat(jobs(db, "cron-race")).isEqualTo(1);
    }

    /**
     * Two engines evaluate the same schedule at the same clock instants, concurrently, as overlapping leaders
     * would; then the first stops and the second takes over after missing some fires (a failover), catching them
     * up. Every fire time is enqueued exactly once: no fire lost, none doubled.
     */
    @Test
    void twoEnginesAndAFailoverEnqueueEachFireTimeExactlyOnce(TestDatabase db) {
        CronSchedule everySecond = CronSchedule.builder("overlap", "* * * * * *").queue("cron-overlap").catchUp(100)
                .build();
        ManualRiffle a = RiffleTestKit.manual(db, c -> c.schedule(everySecond));
        // A registered the schedule first: its start is where evaluation begins (B's same definition changes nothing).
        Instant registered = a.clock().instant();
        List<CronFire> fired = new ArrayList<>();
        Instant t0;
        try (ManualRiffle b = RiffleTestKit.manual(db, c -> c.schedule(everySecond))) {
            try (a) {
                t0 = b.clock().instant().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
                for (int i = 0; i < 10; i++) {
                    Instant at = t0.plusSeconds(i);
                    a.clock().set(at);
                    b.clock().set(at);
                    List<CronFire> both = Mono.zip(a.fireSchedulesNow(), b.fireSchedulesNow(), (x, y) -> {
                        List<CronFire> all = new ArrayList<>(x);
                        all.addAll(y);
                        return all;
                    }).block(TIMEOUT);
                    fired.addAll(both);
                }
            }
            // A is gone; B was not evaluating for five seconds, then takes over and catches up.
            b.clock().set(t0.plusSeconds(14));
            fired.addAll(b.fireSchedulesNow().block(TIMEOUT));
        }
        List<Instant> expected = everySecond.firesBetween(registered, t0.plusSeconds(14), 1000);
        assertThat(expected).hasSizeGreaterThanOrEqualTo(15);
        assertThat(fired).extracting(CronFire::fireAt).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(jobs(db, "cron-overlap")).as("jobs in the database").isEqualTo(expected.size());
    }

    private static long count(Connection c, String sql) throws Exception {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static long jobs(TestDatabase db, String queue) {
        return db.queryLong("SELECT (SELECT count(*) FROM ready_entries WHERE queue = ?) "
                + "+ (SELECT count(*) FROM deferred_jobs WHERE queue = ?)", queue, queue);
    }
}
