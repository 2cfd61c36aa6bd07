package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Heartbeat evidence is lazy and batched: short jobs never create attempt_state; a long attempt gets exactly one
 * row, is not rescued while its process beats, and is rescued once the process stops beating.
 */
@RiffleTest
class HeartbeatIT {

    private static final Duration BEAT = Duration.ofMillis(200);
    private static final Duration STALE = Duration.ofMillis(1500);

    private static Riffle beating(TestDatabase db) {
        return Fixtures.manual(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false)
                .heartbeatInterval(BEAT).staleAfter(STALE).build()));
    }

    @Test
    void shortJobsNeverCreateAttemptState(TestDatabase db) {
        Riffle riffle = beating(db);
        try {
            Fixtures.enqueue(riffle, "short", 50);
            riffle.subscribe("short").take(50).flatMap(Job::complete, 8, 1).blockLast(Fixtures.TIMEOUT);
            Fixtures.pause(BEAT.multipliedBy(3));
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM leases")).isZero();
        } finally {
            Fixtures.close(riffle);
        }
    }

    @Test
    void aLongAttemptHeartbeatsIsNotRescuedAndIsRescuedOnceItsProcessStops(TestDatabase db) {
        Riffle worker = beating(db);
        Riffle leader = beating(db);
        boolean workerClosed = false;
        try {
            Fixtures.enqueue(worker, "long", 1);
            Job job = Fixtures.claim(worker, "long", 1).get(0);
            Fixtures.await("first heartbeat", () -> db.queryLong("SELECT count(*) FROM attempt_state") == 1);
            String first = db.queryRows("SELECT heartbeat_at::text AS t FROM attempt_state").get(0).get("t").toString();
            Fixtures.await("heartbeat refreshed", () -> !db.queryRows("SELECT heartbeat_at::text AS t FROM attempt_state")
                    .get(0).get("t").toString().equals(first));
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ? AND run_lease = ?",
                    job.id(), job.runLease())).isEqualTo(1);

            // Older than the staleness cutoff, but alive: the rescuer must pass it.
            Fixtures.pause(STALE.plus(BEAT));
            List<RescuedAttempt> none = leader.maintenance().rescueStaleNow().block(Fixtures.TIMEOUT);
            assertThat(none).isEmpty();

            // The worker process goes away without finishing: heartbeats stop, the attempt stays open.
            worker.close().block(Fixtures.TIMEOUT);
            workerClosed = true;
            assertThat(Fixtures.openClaims(db)).isEqualTo(1);
            Fixtures.await("rescued after staleness", () -> !leader.maintenance().rescueStaleNow()
                    .block(Fixtures.TIMEOUT).isEmpty());
            assertThat(Fixtures.openClaims(db)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state")).as("evidence removed with the attempt").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable' AND run_lease = ?",
                    job.id(), job.runLease())).isEqualTo(1);
        } finally {
            if (!workerClosed) {
                Fixtures.close(worker);
            }
            Fixtures.close(leader);
        }
    }
}
