package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
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
import reactor.core.publisher.Flux;

/**
 * Issue #10 item 7: stale rescue judges "stale" from its window read, then try-locks and closes. A heartbeat that
 * commits in between must win: rescue re-checks the heartbeat under the attempt lock with a fresh snapshot.
 *
 * <p>No lock can park rescue between the snapshot of its window statement and its try-lock (a statement locks its
 * tables while it is planned, before its snapshot is taken), so the test widens that gap instead: thousands of stale
 * claims make the window statement run for a while, and the heartbeat commits as soon as rescue is seen holding the
 * claim slot's tables, that is, while the window statement runs on its older snapshot. Before the fix the live
 * attempt was rescued and its worker's completion rejected.
 *
 * <p>Rescue holds those tables until it commits, so the probe also sees it after the window statement, while it
 * closes what it locked; a heartbeat that lands then is rightly too late. Three things keep the probe inside the
 * window statement on any host (the earlier form failed 3 of 3 on session 18's AMD EPYC host and 2 of 2 on session
 * 19's Intel Xeon host, and variants without the warm-up 4 of 4 more there):
 * <ul>
 *   <li>every pooled session has run a rescue pass first: a session's first pass compiles and plans the closing and
 *       retrying path, which took longer than the window statement (the probe saw rescue 60-107 ms after it started
 *       and 2-20 ms before it ended; warm, it sees it after 3-11 ms of a pass of about 50 ms);</li>
 *   <li>the engine closes at most {@link #BUDGET} attempts a pass, so the phase after the window is short. Two, not
 *       one: the heartbeating attempt is dropped by the re-check, and the other one closed shows that the pass ran;</li>
 *   <li>the probe reads {@code pg_locks} alone (about 0.1 ms; joined with {@code pg_stat_activity} it took up to
 *       17 ms). No other session touches the claim slot's tables while rescue runs.</li>
 * </ul>
 * With the re-check disabled in {@code R__50_rescue.sql} the test fails 3 of 3 ("a freshly heartbeating attempt was
 * rescued"); with it, it passes.
 */
@RiffleTest(claimSlots = 2)
class HeartbeatDuringRescueIT {
    private static final int CLAIMS = 8000;
    private static final int BUDGET = 2;
    private static final int POOL = 2;

    @Test
    void aHeartbeatThatCommitsWhileRescueReadsItsWindowKeepsTheAttemptAlive(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db, b -> b.poolSize(POOL)
                .maintenance(MaintenanceConfig.builder().enabled(false).rescueBudget(BUDGET).build()));
        try {
            // Warm every session's rescue path: one pass per pooled connection, at once, so each compiles and plans
            // what closing and retrying run (the pool's own warm-up covers claims and completions only).
            Fixtures.enqueue(riffle, "warm", POOL * BUDGET);
            Fixtures.claim(riffle, "warm", POOL * BUDGET);
            Fixtures.pause(Duration.ofMillis(1500));
            List<List<RescuedAttempt>> warm = Flux.range(0, POOL)
                    .flatMap(i -> riffle.maintenance().rescueStaleNow(Duration.ofSeconds(1)), POOL)
                    .collectList().block(Fixtures.TIMEOUT);
            assertThat(warm).as("the warm-up passes rescued every warm-up claim").isNotNull()
                    .flatExtracting(l -> l).hasSize(POOL * BUDGET);
            Fixtures.enqueue(riffle, "hb", CLAIMS);
            List<Job> jobs = Fixtures.claim(riffle, "hb", CLAIMS);
            // The first attempt in rescue's order (claimed_at, job_id, run_lease), so it is within the budget.
            Job job = jobs.stream().min(java.util.Comparator.comparingLong(Job::id)).orElseThrow();
            Fixtures.pause(Duration.ofMillis(1500)); // older than the 1 s stale threshold below

            try (Connection hb = db.openJdbc(); Connection probe = db.openJdbc();
                 PreparedStatement beat = hb.prepareStatement("INSERT INTO attempt_state (job_id, run_lease, heartbeat_at, "
                         + "updated_at) VALUES (?, ?, clock_timestamp(), clock_timestamp())");
                 PreparedStatement inWindow = probe.prepareStatement("SELECT count(*) FROM pg_locks l "
                         + "WHERE l.relation = 'lease_claim_batches_0'::regclass AND l.pid <> pg_backend_pid()")) {
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
                assertThat(rescued).extracting(RescuedAttempt::jobId)
                        .as("a freshly heartbeating attempt was rescued").doesNotContain(job.id());
                assertThat(rescued).as("rescue ran and closed another stale attempt").hasSize(1);
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
