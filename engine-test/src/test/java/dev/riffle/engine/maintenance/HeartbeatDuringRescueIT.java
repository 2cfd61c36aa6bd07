package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Issue #10 item 7: stale rescue judges "stale" from its window read, then try-locks and closes. A heartbeat that
 * commits in between must win: rescue re-checks the heartbeat under the attempt lock with a fresh snapshot.
 *
 * <p>No lock can park rescue between the snapshot of its window statement and its try-lock (a statement locks its
 * tables while it is planned, before its snapshot is taken), so the test widens that gap instead: thousands of stale
 * claims make the window statement run for a while, and the heartbeat commits as soon as rescue is seen holding the
 * claim slot's tables, that is, while the window statement runs on its older snapshot. Before the fix the live
 * attempt was rescued and its worker's completion rejected.
 */
@RiffleTest(claimSlots = 2)
class HeartbeatDuringRescueIT {
    private static final int CLAIMS = 8000;

    @Test
    void aHeartbeatThatCommitsWhileRescueReadsItsWindowKeepsTheAttemptAlive(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db);
        try {
            Fixtures.enqueue(riffle, "hb", CLAIMS);
            List<Job> jobs = Fixtures.claim(riffle, "hb", CLAIMS);
            // The first attempt in rescue's order (claimed_at, job_id, run_lease), so it is within the budget.
            Job job = jobs.stream().min(java.util.Comparator.comparingLong(Job::id)).orElseThrow();
            Fixtures.pause(Duration.ofMillis(1500)); // older than the 1 s stale threshold below

            try (Connection hb = db.openJdbc(); Connection probe = db.openJdbc();
                 PreparedStatement beat = hb.prepareStatement("INSERT INTO attempt_state (job_id, run_lease, heartbeat_at, "
                         + "updated_at) VALUES (?, ?, clock_timestamp(), clock_timestamp())");
                 PreparedStatement inWindow = probe.prepareStatement("SELECT count(*) FROM pg_locks l "
                         + "JOIN pg_stat_activity a ON a.pid = l.pid JOIN pg_class c ON c.oid = l.relation "
                         + "WHERE a.query LIKE '%rescue_stale(%' AND a.pid <> pg_backend_pid() "
                         + "AND c.relname = 'lease_claim_batches_0'")) {
                beat.setLong(1, job.id());
                beat.setLong(2, job.runLease());
                CompletableFuture<List<RescuedAttempt>> rescue =
                        riffle.maintenance().rescueStaleNow(Duration.ofSeconds(1)).toFuture();
                long until = System.nanoTime() + Fixtures.TIMEOUT.toNanos();
                boolean seen = false;
                while (!seen && !rescue.isDone() && System.nanoTime() < until) {
                    try (var rs = inWindow.executeQuery()) {
                        seen = rs.next() && rs.getLong(1) > 0;
                    }
                }
                assertThat(seen).as("rescue was seen inside its window statement").isTrue();
                beat.executeUpdate(); // autocommit: the worker's heartbeat lands now
                List<RescuedAttempt> rescued = rescue.get(Fixtures.TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
                assertThat(rescued).as("rescue ran").isNotEmpty();
                assertThat(rescued).extracting(RescuedAttempt::jobId)
                        .as("a freshly heartbeating attempt was rescued").doesNotContain(job.id());
            }
            job.complete().block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'", job.id()))
                    .isEqualTo(1);
            assertThat(Fixtures.doubleClosures(db)).isZero();
        } finally {
            Fixtures.close(riffle);
        }
    }
}
