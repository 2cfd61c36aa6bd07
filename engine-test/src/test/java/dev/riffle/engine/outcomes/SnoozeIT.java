package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.delaySeconds;
import static dev.riffle.engine.outcomes.OutcomeKit.makeDue;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/** Snooze runs the job again later without consuming an attempt; the run lease still moves on. */
@RiffleTest
class SnoozeIT extends ProbeIT {
    private record Seen(int attempt, long runLease) {}

    @Test
    void snoozeDoesNotConsumeAnAttemptEvenOnTheLastOne() {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        // Scripted by run lease: snooze, fail, snooze (on the last allowed attempt), complete.
        JobHandler script = job -> {
            seen.add(new Seen(job.attempt(), job.runLease()));
            return switch ((int) job.runLease()) {
                case 1 -> Mono.just(JobOutcome.snooze(Duration.ofMinutes(10)));
                case 2 -> Mono.error(new IllegalStateException("transient"));
                case 3 -> Mono.just(JobOutcome.snooze(Duration.ofSeconds(30)));
                default -> Mono.empty();
            };
        };
        Disposable worker = riffle.work(Map.of("sleepy", script), 2, "snooze").subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("sleepy").queue("snooze").maxAttempts(2).build());

            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_lease = 1", id);
            Map<String, Object> snoozed = row(db, "SELECT state::text AS state, attempt, payload FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(snoozed.get("state")).isEqualTo("scheduled");
            assertThat(asLong(snoozed.get("attempt"))).as("the snoozed attempt is given back").isZero();
            assertThat(snoozed.get("payload")).as("a snooze is not an error").isNull();
            assertThat(delaySeconds(db, id, 1)).isCloseTo(600.0, within(0.05));
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);

            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_lease = 2", id);
            assertThat(row(db, "SELECT state::text AS state FROM deferred_jobs WHERE job_id = ?", id).get("state"))
                    .isEqualTo("retryable");
            assertThat(db.queryLong("SELECT attempt FROM deferred_jobs WHERE job_id = ?", id)).isEqualTo(1);
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);

            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_lease = 3", id);
            Map<String, Object> again = row(db, "SELECT state::text AS state, attempt FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(again.get("state")).isEqualTo("scheduled");
            assertThat(asLong(again.get("attempt"))).isEqualTo(1);
            assertThat(delaySeconds(db, id, 3)).isCloseTo(30.0, within(0.05));
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);

            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id);
            await("four deliveries", () -> seen.size() == 4);
            assertThat(List.copyOf(seen)).containsExactly(new Seen(1, 1), new Seen(1, 2), new Seen(2, 3), new Seen(2, 4));
            Map<String, Object> t = row(db, "SELECT state::text AS state, attempt, run_lease, "
                    + "jsonb_array_length(payload->'errors') AS errors FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(t.get("state")).as("completed, not failed for running out of attempts").isEqualTo("completed");
            assertThat(asLong(t.get("attempt"))).isEqualTo(2);
            assertThat(asLong(t.get("run_lease"))).isEqualTo(4);
            assertThat(asLong(t.get("errors"))).as("only the real failure is in the history").isEqualTo(1);
            for (long lease = 1; lease <= 4; lease++) {
                assertThat(closuresOf(db, id, lease)).as("closures of attempt %d", lease).isEqualTo(1);
            }
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }
}
