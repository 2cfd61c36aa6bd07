package dev.riffle.engine.cron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CronFire;
import dev.riffle.engine.api.CronSchedule;
import dev.riffle.engine.api.CronScheduleStatus;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.ManualRiffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestKit;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Cron schedules stepped with the engine's test clock ({@link ManualRiffle#fireSchedulesNow()}): fires at the right
 * times, next fire readable, pause and resume, coalescing versus catch-up; and the leader's own loop firing.
 */
@RiffleTest
class CronScheduleIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(15);

    @Test
    void firesAtTheFireTimesOnlyOnceEachAndTheNextFireIsReadable(TestDatabase db) {
        clean(db);
        CronSchedule every10s = CronSchedule.builder("ten", "*/10 * * * * *").kind("tick").queue("cron-ten")
                .args("{\"report\":\"daily\"}").priority(3).maxAttempts(2).build();
        try (ManualRiffle manual = RiffleTestKit.manual(db, b -> b.schedule(every10s))) {
            Instant start = manual.clock().instant();
            Instant first = every10s.nextFireAfter(start).orElseThrow();
            assertThat(first).isAfter(start).isBeforeOrEqualTo(start.plusSeconds(10));
            assertThat(first.getEpochSecond() % 10).isZero();

            CronScheduleStatus status = single(manual);
            // args come back as jsonb prints them; the rest of the definition as given
            assertThat(status.schedule()).usingRecursiveComparison().ignoringFields("argsJson").isEqualTo(every10s);
            assertThat(status.paused()).isFalse();
            assertThat(status.lastFireAt()).isNull();
            assertThat(status.nextFireAt()).isEqualTo(first);

            assertThat(fire(manual)).as("nothing due at start").isEmpty();
            if (first.minusMillis(1).isAfter(start)) {
                manual.clock().set(first.minusMillis(1));
                assertThat(fire(manual)).as("a millisecond early").isEmpty();
            }

            manual.clock().set(first);
            List<CronFire> fired = fire(manual);
            assertThat(fired).extracting(CronFire::schedule, CronFire::fireAt).containsExactly(
                    org.assertj.core.groups.Tuple.tuple("ten", first));
            assertThat(fire(manual)).as("the same fire time again").isEmpty();
            long id = fired.get(0).jobId();
            Map<String, Object> job = db.queryRows("SELECT kind, queue, args->>'report' AS report, priority, "
                    + "max_attempts FROM ready_entries WHERE job_id = ?", id).get(0);
            assertThat(job).containsEntry("kind", "tick").containsEntry("queue", "cron-ten")
                    .containsEntry("report", "daily");
            assertThat(((Number) job.get("priority")).intValue()).isEqualTo(3);
            assertThat(((Number) job.get("max_attempts")).intValue()).isEqualTo(2);

            status = single(manual);
            assertThat(status.lastFireAt()).isEqualTo(first);
            assertThat(status.nextFireAt()).isEqualTo(first.plusSeconds(10));

            manual.clock().set(first.plusSeconds(10).plusMillis(400));
            assertThat(fire(manual)).extracting(CronFire::fireAt).containsExactly(first.plusSeconds(10));
            assertThat(jobs(db, "cron-ten")).isEqualTo(2);
        }
    }

    @Test
    void missedFiresAreCoalescedByDefaultAndCaughtUpOnRequestUpToTheBound(TestDatabase db) {
        clean(db);
        CronSchedule coalesce = CronSchedule.builder("coalesce", "*/10 * * * * *").queue("cron-coalesce").build();
        CronSchedule catchUp = CronSchedule.builder("catch-up", "*/10 * * * * *").queue("cron-catch-up").catchUp(3)
                .build();
        try (ManualRiffle manual = RiffleTestKit.manual(db, b -> b.schedule(coalesce).schedule(catchUp))) {
            Instant start = manual.clock().instant();
            // Six or seven fire times pass with nobody evaluating them (no leader, an outage).
            Instant now = manual.clock().advance(Duration.ofSeconds(65));
            Instant latest = now.truncatedTo(ChronoUnit.SECONDS).minusSeconds(now.getEpochSecond() % 10);
            assertThat(coalesce.firesBetween(start, now, 100)).hasSizeGreaterThanOrEqualTo(6);

            List<CronFire> fired = fire(manual);
            assertThat(fired).filteredOn(f -> f.schedule().equals("coalesce")).extracting(CronFire::fireAt)
                    .as("one job for the latest missed fire").containsExactly(latest);
            assertThat(fired).filteredOn(f -> f.schedule().equals("catch-up")).extracting(CronFire::fireAt)
                    .as("the latest three, one job each").containsExactly(latest.minusSeconds(20),
                            latest.minusSeconds(10), latest);
            assertThat(jobs(db, "cron-coalesce")).isEqualTo(1);
            assertThat(jobs(db, "cron-catch-up")).isEqualTo(3);
            assertThat(fire(manual)).as("nothing left to catch up").isEmpty();
        }
    }

    @Test
    void adminSchedulesCanBePausedResumedChangedAndDeleted(TestDatabase db) {
        clean(db);
        try (ManualRiffle manual = RiffleTestKit.manual(db)) {
            var admin = manual.riffle().admin();
            CronSchedule s = CronSchedule.builder("admin", "*/10 * * * * *").queue("cron-admin").build();
            assertThat(admin.upsertSchedule(s).block(TIMEOUT)).as("created").isTrue();
            assertThat(admin.upsertSchedule(s).block(TIMEOUT)).as("same definition").isFalse();

            assertThat(admin.pauseSchedule("admin").block(TIMEOUT)).isTrue();
            assertThat(admin.pauseSchedule("admin").block(TIMEOUT)).as("paused already").isFalse();
            CronScheduleStatus paused = single(manual);
            assertThat(paused.paused()).isTrue();
            assertThat(paused.nextFireAt()).isNull();
            manual.advanceClock(Duration.ofSeconds(30));
            assertThat(fire(manual)).as("paused: nothing fires").isEmpty();

            // Resume: the fires that fell due while paused are skipped; the next one after the resume fires.
            Instant resumedAt = manual.clock().instant();
            assertThat(admin.resumeSchedule("admin").block(TIMEOUT)).isTrue();
            assertThat(fire(manual)).isEmpty();
            Instant next = single(manual).nextFireAt();
            assertThat(next).isAfter(resumedAt).isEqualTo(s.nextFireAfter(resumedAt).orElseThrow());
            manual.clock().set(next);
            assertThat(fire(manual)).extracting(CronFire::fireAt).containsExactly(next);

            // A change of definition takes effect from now: the new expression does not fire for the past.
            CronSchedule hourly = CronSchedule.builder("admin", "0 0 * * * *").queue("cron-admin").build();
            assertThat(admin.upsertSchedule(hourly).block(TIMEOUT)).isTrue();
            Instant changedAt = manual.clock().instant();
            assertThat(single(manual).nextFireAt()).isEqualTo(hourly.nextFireAfter(changedAt).orElseThrow());
            assertThat(fire(manual)).isEmpty();

            assertThat(admin.deleteSchedule("admin").block(TIMEOUT)).isTrue();
            assertThat(admin.deleteSchedule("admin").block(TIMEOUT)).isFalse();
            assertThat(admin.schedules().collectList().block(TIMEOUT)).isEmpty();
            assertThat(jobs(db, "cron-admin")).isEqualTo(1);

            assertThatThrownBy(() -> admin.pauseSchedule("no such!").block(TIMEOUT))
                    .isInstanceOf(InvalidJobException.class);
            assertThatThrownBy(() -> RiffleTestKit.testDefaults(db).schedule(s).schedule(s).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("registered twice");
        }
    }

    @Test
    void theMaintenanceLeaderFiresOnItsOwn(TestDatabase db) {
        clean(db);
        CronSchedule everySecond = CronSchedule.builder("leader", "* * * * * *").queue("cron-leader").build();
        Riffle riffle = RiffleTestKit.startEngine(db, b -> b.schedule(everySecond)
                .maintenance(MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(100))
                        .promotionInterval(Duration.ofMillis(50)).cronInterval(Duration.ofMillis(100)).build()));
        try {
            Await.until("the leader enqueued a fire", TIMEOUT, () -> jobs(db, "cron-leader") >= 1);
            assertThat(riffle.maintenance().isLeader()).isTrue();
        } finally {
            riffle.close().block(TIMEOUT);
            clean(db);
        }
    }

    private static List<CronFire> fire(ManualRiffle manual) {
        return manual.fireSchedulesNow().block(TIMEOUT);
    }

    /** Each test starts with no schedule in the class's schema (a fire pass fires every stored one). */
    private static void clean(TestDatabase db) {
        db.execute("DELETE FROM cron_schedules");
    }

    private static CronScheduleStatus single(ManualRiffle manual) {
        List<CronScheduleStatus> all = manual.riffle().admin().schedules().collectList().block(TIMEOUT);
        assertThat(all).hasSize(1);
        return all.get(0);
    }

    private static long jobs(TestDatabase db, String queue) {
        return db.queryLong("SELECT (SELECT count(*) FROM ready_entries WHERE queue = ?) "
                + "+ (SELECT count(*) FROM deferred_jobs WHERE queue = ?)", queue, queue);
    }
}
