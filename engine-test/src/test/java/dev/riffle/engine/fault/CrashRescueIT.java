package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.ChaosWorkerMain;
import dev.riffle.engine.test.fault.ChildJvm;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * RELIABILITY S02, issue #4: a worker JVM is killed with SIGKILL while it holds claimed jobs mid-batch; a second
 * engine rescues them; every job completes, none is lost, and no completion from the dead attempts is accepted.
 */
@RiffleTest
class CrashRescueIT {

    private static final String QUEUE = "crash";

    @Test
    void aKilledWorkersClaimsAreRescuedAndEveryJobCompletesOnce(TestDatabase db) {
        int n = 400;
        int held = 32;
        String app = Fixtures.appName("crash");
        // The survivor is the maintenance leader; the child never campaigns (--maintenance false).
        Riffle survivor = Fixtures.start(db.url(), db.schema(), app + "-survivor", b -> b.maintenance(
                MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200)).rescueInterval(Duration.ofMillis(300))
                        .heartbeatInterval(Duration.ofMillis(300)).staleAfter(Duration.ofSeconds(1))
                        .promotionInterval(Duration.ofMillis(100)).rotationInterval(Duration.ofMillis(300))
                        .rotationMinInterval(Duration.ofMillis(300)).rotationMaxAge(Duration.ofMillis(300))
                        .claimRotationMaxAge(Duration.ofMillis(300)).build()));
        try {
            List<Long> ids = Fixtures.enqueue(survivor, QUEUE, n);
            Set<Long> deadAttempts = new HashSet<>();
            try (ChildJvm child = ChildJvm.launch(ChaosWorkerMain.class, List.of(
                    "--url", Fixtures.urlArgument(db.url()), "--schema", db.schema(), "--queue", QUEUE,
                    "--role", "hang", "--concurrency", Integer.toString(held), "--app-name", app + "-child",
                    "--maintenance", "false"))) {
                child.awaitLine("READY"::equals, Fixtures.TIMEOUT);
                assertThat(Fixtures.await(() -> openAttemptsOf(db, QUEUE) >= held, Fixtures.TIMEOUT))
                        .as("child holds %d claimed jobs", held).isTrue();
                child.kill();
                assertThat(child.isAlive()).isFalse();
            }
            // Attempts the dead child held: run_lease 1 of the jobs claimed in the child's batches.
            for (Map<String, Object> r : db.queryRows("SELECT j AS job_id FROM lease_claim_batches b, unnest(b.job_ids) j "
                    + "WHERE b.queue = ?", QUEUE)) {
                deadAttempts.add(((Number) r.get("job_id")).longValue());
            }
            assertThat(deadAttempts).hasSize(held);

            // The survivor drains everything, including the rescued jobs once they are retried.
            Map<Long, Long> leaseOf = Fixtures.drainOnce(survivor, QUEUE, ids, 32);
            // The dead attempts were closed by rescue, never by a completion; their jobs ran again with run lease 2.
            for (long id : deadAttempts) {
                assertThat(leaseOf.get(id)).as("run lease of the completing attempt of job " + id).isEqualTo(2L);
            }
            // Closure rows may already be truncated by claim-ring prune here; the rescuer's own count is kept.
            assertThat(survivor.stats().staleRescued()).isEqualTo(held);
            Map<Long, Long> terminalRows = new HashMap<>();
            for (Map<String, Object> r : db.queryRows("SELECT job_id, count(*) AS n FROM terminal_jobs WHERE queue = ? GROUP BY job_id", QUEUE)) {
                terminalRows.put(((Number) r.get("job_id")).longValue(), ((Number) r.get("n")).longValue());
            }
            // Terminal history lives only as long as its queue slot (rotation runs every 300 ms here), so check
            // what is retained: never two terminal rows for one job.
            assertThat(terminalRows).isNotEmpty().allSatisfy((id, count) -> assertThat(count).isEqualTo(1L));
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = ? AND run_lease = 1 AND job_id = ANY (?)",
                    QUEUE, deadAttempts.toArray(Long[]::new))).as("a dead attempt's completion was accepted").isZero();
            // The storage invariants hold after the crash, the rescue and the prunes that ran beside them.
            assertThat(survivor.admin().doctor().block(Fixtures.TIMEOUT).violations()).as("proof doctor").isEmpty();
        } finally {
            Fixtures.close(survivor);
        }
    }

    private static long openAttemptsOf(TestDatabase db, String queue) {
        return db.queryLong("SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.receipt_ids) r "
                + "WHERE b.queue = ? AND NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches c "
                + "WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> r)", queue);
    }
}
