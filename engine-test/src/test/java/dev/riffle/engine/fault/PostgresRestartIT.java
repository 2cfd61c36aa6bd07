package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.fault.CompletionOracle;
import dev.riffle.engine.test.fault.PgCluster;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * S18 and S19 on a cluster this class owns: while one engine drains a queue and a producer keeps enqueuing, the
 * server is restarted ({@code pg_ctl restart -m fast}) and later crashed ({@code stop -m immediate}, then crash
 * recovery).
 *
 * <p>What it proves: every job whose enqueue committed (including enqueues whose acknowledgement was lost in the
 * fault) is completed exactly once; every enqueue the producer saw acknowledged survived the crash
 * ({@code synchronous_commit=on}); the same engine and the same subscriptions carry on after each fault without
 * being restarted, LISTEN included; and nothing is left open. Claims that committed just before the crash but
 * never reached the engine would stay open until rescue; the oracle lists them if that happens.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(180)
class PostgresRestartIT {

    @RegisterExtension
    static final PgCluster PG = PgCluster.create();

    private static final String SCHEMA = "restart_it";
    private static final String QUEUE = "restart";
    private static final int JOBS = 3_000;
    private static final int PRODUCER_BATCHES = 20;
    private static final int PRODUCER_BATCH = 50;

    @Test
    void fastRestartAndCrashMidDrainLoseNothingAndAcceptNothingTwice() {
        Fixtures.migrate(PG, SCHEMA);
        long t0 = System.nanoTime();
        String app = Fixtures.appName("restart");
        Riffle riffle = Fixtures.start(PG.url(), SCHEMA, app, b -> {});
        List<Long> acknowledged = new ArrayList<>(Fixtures.enqueue(riffle, QUEUE, JOBS));
        int producerFailures = 0;
        int produced = 0;
        List<String> faults = new ArrayList<>();
        List<Instant[]> windows = new ArrayList<>();
        try (Drain drain = Drain.start(List.of(riffle), QUEUE, 2, 16, Duration.ofMillis(5))) {
            long deadline = System.nanoTime() + Duration.ofSeconds(45).toNanos();
            boolean restarted = false;
            boolean crashed = false;
            while ((!crashed || produced < PRODUCER_BATCHES) && System.nanoTime() < deadline) {
                long done = drain.finished();
                if (!restarted && done >= JOBS / 4) {
                    faults.add(fault("restart -m fast", drain, PG::restartFast, windows));
                    restarted = true;
                } else if (restarted && !crashed && done >= JOBS * 6 / 10) {
                    faults.add(fault("crash", drain, PG::crash, windows));
                    crashed = true;
                } else if (produced < PRODUCER_BATCHES) {
                    // Right after a fault the pooled connections are dead and this fails; a failed call may still
                    // have committed, which the oracle accounts for by reading what is in the database.
                    try {
                        acknowledged.addAll(riffle.client().enqueueMany(Fixtures.jobs(QUEUE, JOBS + produced * PRODUCER_BATCH,
                                PRODUCER_BATCH)).block(Duration.ofSeconds(10)));
                        produced++;
                    } catch (RuntimeException e) {
                        producerFailures++;
                    }
                    Fixtures.sleep(100);
                } else {
                    Fixtures.sleep(5);
                }
            }
            assertThat(crashed).as("both faults happened before the deadline; %s", drain.summary()).isTrue();
            assertThat(produced).as("producer batches acknowledged (%d failed)", producerFailures).isEqualTo(PRODUCER_BATCHES);

            CompletionOracle.Report report = CompletionOracle.awaitDrained(PG.url(), SCHEMA, QUEUE, acknowledged,
                    acknowledged.size(), Duration.ofSeconds(30));
            // An in-doubt claim (RELIABILITY.md S22): the claim committed as the server went down and its answer never
            // reached the engine (seen in CI: 8 jobs of one batch claimed 10 ms before the crash). The engine holds
            // nothing for them, so no heartbeat covers them, and the contract is rescue after staleness, which these
            // fixtures push beyond the test. Such attempts must have been claimed inside a fault window and must hold
            // every job not yet terminal; one stale-rescue pass with a short staleness then has to bring each back,
            // to complete on its next lease. Anything else open (an attempt the engine forgot) still fails below.
            List<CompletionOracle.OpenAttempt> inDoubt = report.openAttempts().stream()
                    .filter(a -> windows.stream().anyMatch(w -> !a.claimedAt().isBefore(w[0].minusSeconds(1))
                            && !a.claimedAt().isAfter(w[1].plusSeconds(1))))
                    .toList();
            if (!inDoubt.isEmpty()) {
                assertThat(report.openAttempts()).as("open attempts outside a fault window:%n%s", report.describe())
                        .hasSameSizeAs(inDoubt);
                assertThat(report.notTerminalAndUnclaimed()).as("lost:%n%s", report.describe()).isEmpty();
                Fixtures.sleep(1_500);
                assertThat(riffle.maintenance().rescueStaleNow(Duration.ofSeconds(1)).block(Duration.ofSeconds(30)))
                        .as("in-doubt claims rescued").hasSameSizeAs(inDoubt);
                report = CompletionOracle.awaitDrained(PG.url(), SCHEMA, QUEUE, acknowledged, acknowledged.size(),
                        Duration.ofSeconds(30));
                System.out.printf("PostgresRestartIT: %d in-doubt claims at a fault, rescued and completed%n",
                        inDoubt.size());
            }
            String drainTime = Fixtures.seconds(t0);
            assertThat(Fixtures.await(() -> riffle.stats().listening(), Duration.ofSeconds(10)))
                    .as("LISTEN re-established").isTrue();
            // A job enqueued now must be picked up promptly, not on the next safety poll.
            AtomicInteger lateEnqueueFailures = new AtomicInteger();
            long late0 = System.nanoTime();
            acknowledged.addAll(Fixtures.enqueueRetrying(riffle, QUEUE, 10, lateEnqueueFailures));
            CompletionOracle.Report after = CompletionOracle.awaitDrained(PG.url(), SCHEMA, QUEUE, acknowledged,
                    acknowledged.size(), Duration.ofSeconds(10));
            long lateMillis = (System.nanoTime() - late0) / 1_000_000;

            System.out.printf("PostgresRestartIT: %s; drained %d committed jobs (%d acknowledged, %d producer calls "
                            + "failed) in %s; 10 late jobs in %d ms (%d failed enqueue calls first); %s%n", faults,
                    report.committed().size(), acknowledged.size() - 10, producerFailures, drainTime, lateMillis,
                    lateEnqueueFailures.get(), drain.summary());
            assertThat(report.notTerminal()).as("after the faults:%n%s", report.describe()).isEmpty();
            after.assertExactlyOnce();
            assertThat(after.committed()).containsAll(acknowledged);
            // One closure per completion, plus one 'rescued' closure per in-doubt claim brought back above.
            assertThat(after.closedCount()).isEqualTo(after.committed().size() + inDoubt.size());
            assertThat(after.completedClosures()).isEqualTo(after.committed().size());
            assertThat(drain.subscriptionsEnded()).as("subscriptions that ended: %s", drain.subscriptionErrors()).isZero();
            assertThat(drain.gaveUp()).as("completions that failed even after retries").isZero();
            assertThat(lateMillis).as("pickup after recovery").isLessThan(5_000);
        } finally {
            Fixtures.close(riffle);
        }
    }

    /** Runs the fault, then waits (bounded) until completions flow again, and describes both durations. */
    private static String fault(String name, Drain drain, Runnable action, List<Instant[]> windows) {
        long before = drain.finished();
        long start = System.nanoTime();
        Instant from = Instant.now();
        action.run();
        long back = System.nanoTime();
        windows.add(new Instant[] {from, Instant.now()});
        long atBack = drain.finished();
        boolean resumed = Fixtures.await(() -> drain.finished() >= atBack + 50, Duration.ofSeconds(20));
        return String.format(java.util.Locale.ROOT, "%s at %d completed: server back in %d ms, completions %s %d ms later",
                name, before, (back - start) / 1_000_000, resumed ? "resumed" : "NOT resumed", (System.nanoTime() - back) / 1_000_000);
    }
}
