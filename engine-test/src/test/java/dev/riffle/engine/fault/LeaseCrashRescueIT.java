package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.ChaosWorkerMain;
import dev.riffle.engine.test.fault.ChildJvm;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * RELIABILITY S02 for materialized leases (issue #5): a worker JVM holding leased attempts of a materialized queue is
 * killed with SIGKILL. Its attempts are lease-managed, so the receipt-side stale sweep must leave them to the lease
 * side; lease rescue closes each one exactly once (explicit row-local closure, lease deleted), every job completes
 * once on the survivor, and no completion from a dead attempt is accepted.
 */
@RiffleTest
class LeaseCrashRescueIT {

    private static final String QUEUE = "crash-lease";

    @Test
    void aKilledWorkersLeasesAreRescuedAndEveryJobCompletesOnce(TestDatabase db) {
        int n = 200;
        int held = 16;
        String app = Fixtures.appName("lcrash");
        Riffle survivor = Fixtures.start(db.url(), db.schema(), app + "-survivor", b -> b
                .queue(QueueConfig.of(QUEUE).withMaterializedLeases())
                .maintenance(MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200))
                        .rescueInterval(Duration.ofMillis(300)).heartbeatInterval(Duration.ofMillis(300))
                        .staleAfter(Duration.ofSeconds(1)).promotionInterval(Duration.ofMillis(100))
                        .rotationInterval(Duration.ofMillis(300)).rotationMinInterval(Duration.ofMillis(300))
                        .rotationMaxAge(Duration.ofMillis(300)).claimRotationMaxAge(Duration.ofMillis(300)).build()));
        try {
            List<Long> ids = Fixtures.enqueue(survivor, QUEUE, n);
            Set<Long> deadAttempts = new HashSet<>();
            try (ChildJvm child = ChildJvm.launch(ChaosWorkerMain.class, List.of(
                    "--url", Fixtures.urlArgument(db.url()), "--schema", db.schema(), "--queue", QUEUE,
                    "--role", "hang", "--concurrency", Integer.toString(held), "--app-name", app + "-child",
                    "--maintenance", "false", "--materialize", "true"))) {
                child.awaitLine("READY"::equals, Fixtures.TIMEOUT);
                assertThat(Fixtures.await(() -> db.queryLong("SELECT count(*) FROM leases WHERE queue = ?", QUEUE) >= held,
                        Fixtures.TIMEOUT)).as("child holds %d leases", held).isTrue();
                child.kill();
                assertThat(child.isAlive()).isFalse();
            }
            for (Map<String, Object> r : db.queryRows("SELECT job_id FROM lease_claims WHERE queue = ?", QUEUE)) {
                deadAttempts.add(((Number) r.get("job_id")).longValue());
            }
            assertThat(deadAttempts).as("row-local claims of the dead child").hasSize(held);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = ?", QUEUE))
                    .as("a materialized queue writes no compact claim batches").isZero();

            Map<Long, Long> leaseOf = Fixtures.drainOnce(survivor, QUEUE, ids, 16);
            for (long id : deadAttempts) {
                assertThat(leaseOf.get(id)).as("run lease of the completing attempt of job " + id).isEqualTo(2L);
            }
            // The lease side owned the dead attempts; the receipt-side stale sweep must have passed them over.
            assertThat(survivor.stats().leaseRescued()).isEqualTo(held);
            assertThat(survivor.stats().staleRescued()).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM leases WHERE queue = ?", QUEUE)).as("leases left").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = ? AND run_lease = 1 AND job_id = ANY (?)",
                    QUEUE, deadAttempts.toArray(Long[]::new))).as("a dead attempt's completion was accepted").isZero();
        } finally {
            Fixtures.close(survivor);
        }
    }
}
