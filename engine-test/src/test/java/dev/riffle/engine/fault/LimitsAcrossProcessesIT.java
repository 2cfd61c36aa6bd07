package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.ChaosWorkerMain;
import dev.riffle.engine.test.fault.ChildJvm;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * A global concurrency limit (issue #14 item 4, docs/limits.md) held across two engine processes: two worker JVMs
 * whose handlers never finish, eight handlers each, on a queue limited to three running attempts. The limit is
 * recorded in the schema by a third engine; the workers do not configure it and obey it all the same. Open attempts
 * are counted from the claim ring. Without the limit the two processes hold sixteen.
 */
@RiffleTest
class LimitsAcrossProcessesIT {
    private static final String QUEUE = "limited-procs";
    private static final int LIMIT = 3;

    private static long openAttempts(TestDatabase db) {
        return db.queryLong("SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.receipt_ids) "
                + "AS i(receipt_id) WHERE b.queue = ? AND NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches c "
                + "WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.receipt_id)", QUEUE);
    }

    @Test
    void twoWorkerProcessesHoldAtMostTheLimitBetweenThem(TestDatabase db) {
        String app = "limits-" + db.schema();
        // Records the limit in queue_meta at start; no maintenance, so nothing rescues the held attempts.
        Riffle recorder = Fixtures.start(db.url(), db.schema(), app + "-recorder",
                b -> b.queue(QueueConfig.of(QUEUE).withConcurrencyLimit(LIMIT))
                        .maintenance(dev.riffle.engine.MaintenanceConfig.builder().enabled(false).build()));
        try {
            Fixtures.enqueue(recorder, QUEUE, 30);
            List<String> args = List.of("--url", Fixtures.urlArgument(db.url()), "--schema", db.schema(),
                    "--queue", QUEUE, "--role", "hang", "--concurrency", "8", "--maintenance", "false");
            try (ChildJvm a = ChildJvm.launch(ChaosWorkerMain.class, withApp(args, app + "-a"));
                 ChildJvm b = ChildJvm.launch(ChaosWorkerMain.class, withApp(args, app + "-b"))) {
                a.awaitLine("READY"::equals, Fixtures.TIMEOUT);
                b.awaitLine("READY"::equals, Fixtures.TIMEOUT);
                assertThat(Fixtures.await(() -> openAttempts(db) == LIMIT, Fixtures.TIMEOUT))
                        .as("the two processes reach the limit between them").isTrue();
                // Several lease renewals (1 s each) later, with 27 jobs still waiting and 16 idle handlers, the two
                // processes still hold no more than the limit.
                long max = 0;
                for (int i = 0; i < 16; i++) {
                    max = Math.max(max, openAttempts(db));
                    Mono.delay(Duration.ofMillis(250)).block();
                }
                assertThat(max).as("open attempts of the limited queue, most seen over 4 s").isEqualTo(LIMIT);
                assertThat(a.isAlive() && b.isAlive()).as("both workers still running").isTrue();
            }
        } finally {
            Fixtures.close(recorder);
        }
    }

    private static List<String> withApp(List<String> args, String appName) {
        java.util.ArrayList<String> out = new java.util.ArrayList<>(args);
        out.add("--app-name");
        out.add(appName);
        return out;
    }
}
