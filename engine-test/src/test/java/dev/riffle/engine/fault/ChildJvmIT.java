package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.ChaosWorkerMain;
import dev.riffle.engine.test.fault.ChildJvm;
import dev.riffle.engine.test.fault.CompletionOracle;
import dev.riffle.engine.test.fault.PgFaults;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Smoke test of the child-worker tooling: a {@link ChaosWorkerMain} in its own JVM drains a queue through the
 * real engine, reports what it claimed on stdout, and dies for real on SIGKILL, taking its database sessions with
 * it.
 *
 * <p>Design of the kill -9 rescue tests that build on this (S02/S03; variant (a) now exists as
 * {@code CrashRescueIT}): the parent starts a
 * child with {@code --role hang --concurrency 32} and waits, on durable state, until the child holds 32 open
 * attempts ({@link CompletionOracle#check} lists them as {@code openAttempts}, and the child printed 32
 * {@code CLAIMED} lines with their run leases). It then {@link ChildJvm#kill()}s the child and starts a surviving
 * in-process engine with short heartbeat/staleness settings and a draining subscription. The assertions: the 32
 * jobs are delivered again with {@code runLease} one higher than the child's {@code CLAIMED} lines, each is
 * completed exactly once ({@code CompletionOracle.Report#assertExactlyOnce()}), the closure ledger holds one
 * rescue closure per killed attempt and one completion per job, and a completion replayed with the child's old
 * {@code (jobId, runLease)} is rejected as stale. Variant (b) kills a {@code complete} child while its completion
 * flush is parked on a fault hook, so the completions exist only in the dead process.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(120)
@RiffleTest
class ChildJvmIT {

    private static final String QUEUE = "child";

    @Test
    void aChildWorkerDrainsTheQueueAndDiesOnSigkill(TestDatabase db) {
        long t0 = System.nanoTime();
        String app = Fixtures.appName("child");
        Riffle producer = Fixtures.start(db.url(), db.schema(), app + "-producer", b -> {});
        try (ChildJvm child = ChildJvm.launch(ChaosWorkerMain.class, List.of(
                "--url", Fixtures.urlArgument(db.url()), "--schema", db.schema(), "--queue", QUEUE,
                "--role", "complete", "--concurrency", "8", "--app-name", app, "--maintenance", "false"))) {
            child.awaitLine("READY"::equals, Fixtures.TIMEOUT);
            long ready = System.nanoTime();

            List<Long> ids = Fixtures.enqueue(producer, QUEUE, 200);
            CompletionOracle.Report report = CompletionOracle.awaitDrained(db.url(), db.schema(), QUEUE, ids, 200,
                    Duration.ofSeconds(45));
            report.assertExactlyOnce();
            assertThat(report.committed()).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(report.completedClosures()).isEqualTo(200);

            // The stdout protocol names every job; the printer thread may lag the database by a moment.
            assertThat(Fixtures.await(() -> lines(child, "COMPLETED ").size() >= 200, Duration.ofSeconds(10)))
                    .as("200 COMPLETED lines; stdout tail %s", child.stdoutLines()).isTrue();
            assertThat(jobIds(lines(child, "CLAIMED "))).isEqualTo(new HashSet<>(ids));
            assertThat(lines(child, "COMPLETED ")).allMatch(l -> l.endsWith(" ACCEPTED"));
            assertThat(PgFaults.backendStates(db.url(), app + ".%")).as("the child's engine sessions").isNotEmpty();

            long pid = child.pid();
            child.kill();
            assertThat(child.isAlive()).isFalse();
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)).isFalse();
            assertThat(child.exitCode()).contains(128 + 9);
            assertThat(Fixtures.await(() -> PgFaults.backendStates(db.url(), app + ".%").isEmpty(), Duration.ofSeconds(15)))
                    .as("the server notices the dead child's sockets and ends its sessions").isTrue();
            System.out.printf("ChildJvmIT: child READY %.1f s after launch; drained, killed and gone after %s%n",
                    (ready - t0) / 1e9, Fixtures.seconds(t0));
        } finally {
            Fixtures.close(producer);
        }
    }

    private static List<String> lines(ChildJvm child, String prefix) {
        return child.stdoutLines().stream().filter(l -> l.startsWith(prefix)).toList();
    }

    private static Set<Long> jobIds(List<String> lines) {
        Set<Long> ids = new HashSet<>();
        for (String l : lines) {
            ids.add(Long.parseLong(l.split(" ")[1]));
        }
        return ids;
    }
}
