package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Issue #10 item 6: under {@code work(...)} the engine owns the handler's subscription, so when the attempt is taken
 * away (an operator's cancel, a deadline rescue) the handler's {@code Mono} is cancelled within a second, the engine
 * writes nothing for the attempt, and the closure that took it away is the only one.
 */
@RiffleTest
class WorkCancelIT extends ProbeIT {
    /** What the handler saw: when it started and when its Mono was cancelled (System.nanoTime(), 0 = not yet). */
    private static final class Seen {
        final AtomicLong started = new AtomicLong();
        final AtomicLong cancelled = new AtomicLong();
        final Queue<JobResult> results = new ConcurrentLinkedQueue<>();

        Mono<JobOutcome> run(Mono<JobOutcome> work) {
            started.set(System.nanoTime());
            return work.doOnCancel(() -> cancelled.set(System.nanoTime()));
        }
    }

    @Test
    void anOperatorCancelStopsTheRunningHandlerAndIsTheOnlyClosure() {
        Riffle riffle = OutcomeKit.start(db);
        Seen seen = new Seen();
        Disposable worker = riffle.work(Map.of("k", job -> seen.run(Mono.delay(Duration.ofSeconds(30))
                        .thenReturn(JobOutcome.complete()))), 2, "work-cancel")
                .subscribe(seen.results::add);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("work-cancel").build());
            await("handler started", () -> seen.started.get() != 0);

            long cancel0 = System.nanoTime();
            assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_RUNNING);
            await("handler's Mono cancelled", Duration.ofSeconds(2), () -> seen.cancelled.get() != 0);
            assertThat(Duration.ofNanos(seen.cancelled.get() - cancel0)).as("cancel to doOnCancel")
                    .isLessThan(Duration.ofMillis(1500));

            await("result emitted", () -> seen.results.size() == 1);
            JobResult r = seen.results.peek();
            assertThat(r.jobId()).isEqualTo(id);
            assertThat(r.accepted()).as("nothing recorded by the worker").isFalse();
            assertThat(r.outcome()).isInstanceOf(JobOutcome.Cancel.class);

            Map<String, Object> t = row(db, "SELECT state::text AS state FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(t.get("state")).isEqualTo("cancelled");
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id)).isEqualTo(1);
            assertThat(closuresOf(db, id, 1)).as("one closure for the one attempt").isEqualTo(1);
            // The engine never tried to finish the attempt: no outcome was sent, so none was rejected either.
            assertThat(riffle.stats().completed() + riffle.stats().closed() + riffle.stats().rejected()).isZero();
            assertThat(riffle.stats().inFlight()).as("the cancelled attempt is no longer held").isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aDeadlineRescueStopsTheRunningHandler() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.withDeadline("work-deadline", Duration.ofSeconds(1))));
        Seen seen = new Seen();
        Disposable worker = riffle.work(Map.of("k", job -> seen.run(Mono.never())), 2, "work-deadline")
                .subscribe(seen.results::add);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("work-deadline").maxAttempts(3).build());
            await("handler started", () -> seen.started.get() != 0);
            await("deadline passed", () -> db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = "
                    + "'work-deadline' AND deadline_at < clock_timestamp()") == 1);

            long rescue0 = System.nanoTime();
            List<RescuedAttempt> rescued = riffle.maintenance().rescueDeadlinesNow().block(TIMEOUT);
            assertThat(rescued).extracting(RescuedAttempt::jobId).containsExactly(id);
            await("handler's Mono cancelled", Duration.ofSeconds(2), () -> seen.cancelled.get() != 0);
            assertThat(Duration.ofNanos(seen.cancelled.get() - rescue0)).as("rescue to doOnCancel")
                    .isLessThan(Duration.ofMillis(1500));

            await("result emitted", () -> seen.results.size() == 1);
            assertThat(seen.results.peek().accepted()).isFalse();
            assertThat(closuresOf(db, id, 1)).as("the rescue's closure is the only one").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable'", id))
                    .as("rescued for a retry").isEqualTo(1);
            assertThat(riffle.stats().completed() + riffle.stats().closed() + riffle.stats().rejected()).isZero();
            assertThat(riffle.stats().inFlight()).isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }
}
