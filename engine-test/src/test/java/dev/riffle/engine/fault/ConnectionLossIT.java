package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.fault.CompletionOracle;
import dev.riffle.engine.test.fault.PgFaults;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * S21 (a), on the shared server: every backend of two engines is terminated with {@code pg_terminate_backend}
 * several times while they drain a queue. The claim loop, the completion batcher, the pool and the LISTEN
 * connection all lose their sessions mid-flight, repeatedly.
 *
 * <p>What it proves: no committed job is lost and none is accepted twice (one terminal row per job, one closure
 * per receipt, {@code sum(closed_count)} equal to the number of jobs), no attempt is left open, the subscriptions
 * survive every round without being re-subscribed, and jobs enqueued after the last round are still picked up,
 * so LISTEN or the poll fallback came back. Handlers retry {@code complete()} the way {@link
 * dev.riffle.engine.test.fault.Completions} does; the test prints how often that was needed.
 *
 * <p>Faults are aimed by {@code application_name}: both engines use a prefix unique to this run, so engines of
 * other tests on the same server are never hit.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(180)
@RiffleTest
class ConnectionLossIT {

    private static final String QUEUE = "connloss";
    private static final int JOBS = 2_000;
    private static final int LATE_JOBS = 100;
    private static final double[] KILL_AT = {0.10, 0.25, 0.40, 0.55, 0.70, 0.85};

    @Test
    void terminatingEveryEngineBackendMidDrainLosesNothingAndAcceptsNothingTwice(TestDatabase db) {
        long t0 = System.nanoTime();
        String app = Fixtures.appName("connloss");
        Riffle a = Fixtures.start(db.url(), db.schema(), app + "-a", cfg -> {});
        Riffle b = Fixtures.start(db.url(), db.schema(), app + "-b", cfg -> {});
        List<Long> ids = new ArrayList<>(Fixtures.enqueue(a, QUEUE, JOBS));
        List<Integer> killed = new ArrayList<>();
        try (Drain drain = Drain.start(List.of(a, b), QUEUE, 1, 16, Duration.ofMillis(5))) {
            // Kill at fixed progress points rather than fixed times, so every round lands mid-drain however fast
            // this machine happens to be today.
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            int round = 0;
            while (round < KILL_AT.length && System.nanoTime() < deadline) {
                if (drain.finished() >= KILL_AT[round] * JOBS) {
                    killed.add(PgFaults.terminate(db.url(), app + "%"));
                    round++;
                } else {
                    Fixtures.sleep(5);
                }
            }
            assertThat(round).as("kill rounds reached before the deadline; %s", drain.summary()).isEqualTo(KILL_AT.length);

            // The engines must find their way back on their own: same engines, same subscriptions.
            CompletionOracle.Report first = CompletionOracle.awaitDrained(db.url(), db.schema(), QUEUE, ids, JOBS,
                    Duration.ofSeconds(30));
            String drainTime = Fixtures.seconds(t0);
            long drained = System.nanoTime();
            AtomicInteger lateEnqueueFailures = new AtomicInteger();
            ids.addAll(Fixtures.enqueueRetrying(b, QUEUE, LATE_JOBS, lateEnqueueFailures));
            CompletionOracle.Report report = CompletionOracle.awaitDrained(db.url(), db.schema(), QUEUE, ids,
                    ids.size(), Duration.ofSeconds(20));

            System.out.printf("ConnectionLossIT: terminated %s backends per round; drained %d jobs in %s, "
                            + "%d late jobs in %s (%d failed enqueue calls first); %s%n", killed, JOBS, drainTime,
                    LATE_JOBS, Fixtures.seconds(drained), lateEnqueueFailures.get(), drain.summary());
            assertThat(first.notTerminal()).as("jobs not terminal after the kill rounds:%n%s", first.describe()).isEmpty();
            report.assertExactlyOnce();
            assertThat(report.committed()).containsAll(ids);
            assertThat(report.closedCount()).isEqualTo(report.committed().size());
            assertThat(report.completedClosures()).isEqualTo(report.committed().size());
            assertThat(killed).as("every round found engine backends to kill").allMatch(n -> n > 0);
            assertThat(drain.subscriptionsEnded()).as("subscriptions that ended: %s", drain.subscriptionErrors()).isZero();
            assertThat(drain.gaveUp()).as("completions that failed even after retries").isZero();
            assertThat(drain.distinctDelivered()).isEqualTo(report.committed().size());
            assertThat(PgFaults.backendStates(db.url(), app + "%"))
                    .as("no engine session left idle in transaction")
                    .noneMatch(s -> s.startsWith("idle in transaction"));
            // The storage invariants hold after six rounds of terminated backends.
            assertThat(a.admin().doctor().block(Duration.ofSeconds(30)).violations()).as("proof doctor").isEmpty();
        } finally {
            Fixtures.close(a, b);
        }
    }
}
