package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
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
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Retry: a failing handler is retried with backoff {@code 2^attempt s * (1 + U[0, 0.25])}, the deferred row carries
 * the attempt count, the error history and the run lease, and the run lease only ever grows.
 */
@RiffleTest
class RetryIT extends ProbeIT {
    // The deferred run_at and the closure's closed_at are two clock_timestamp() reads inside one statement; allow
    // for the time between them on a busy machine, and no more.
    private static final double SAME_STATEMENT_SLACK = 0.05;

    private record Seen(long id, int attempt, long runLease) {}

    private static Seen seen(Job job) {
        return new Seen(job.id(), job.attempt(), job.runLease());
    }

    @Test
    void aHandlerThatFailsTwiceCompletesOnItsThirdAttemptAfterExponentialBackoff() {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        Queue<JobResult> results = new ConcurrentLinkedQueue<>();
        JobHandler flaky = job -> {
            seen.add(seen(job));
            if (job.attempt() == 1) {
                return Mono.error(new IllegalStateException("boom on attempt 1"));
            }
            if (job.attempt() == 2) {
                // Thrown, not signalled: the engine must treat both forms of failure alike.
                throw new IllegalArgumentException("thrown on attempt 2");
            }
            return Mono.empty();
        };
        Disposable worker = riffle.work(Map.of("flaky", flaky), 4, "retry").subscribe(results::add);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("flaky").queue("retry").maxAttempts(5).build());

            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_lease = 1", id);
            Map<String, Object> first = row(db, "SELECT state::text AS state, attempt, run_lease, "
                    + "jsonb_array_length(payload->'errors') AS errors, payload->'errors'->0->>'message' AS message, "
                    + "(payload->'errors'->0->>'attempt')::int AS error_attempt, payload->'errors'->0->>'at' AS at "
                    + "FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(first.get("state")).isEqualTo("retryable");
            assertThat(asLong(first.get("attempt"))).as("attempts consumed").isEqualTo(1);
            assertThat(asLong(first.get("run_lease"))).as("run lease kept").isEqualTo(1);
            assertThat(asLong(first.get("errors"))).isEqualTo(1);
            assertThat((String) first.get("message")).contains("boom on attempt 1");
            assertThat(asLong(first.get("error_attempt"))).isEqualTo(1);
            assertThat(first.get("at")).isNotNull();
            assertThat(delaySeconds(db, id, 1)).as("backoff after attempt 1: 2 s plus up to 25 %")
                    .isBetween(2.0 - SAME_STATEMENT_SLACK, 2.5 + SAME_STATEMENT_SLACK);

            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_lease = 2", id);
            Map<String, Object> second = row(db, "SELECT state::text AS state, attempt, "
                    + "jsonb_array_length(payload->'errors') AS errors, payload->'errors'->1->>'message' AS message, "
                    + "(payload->'errors'->1->>'attempt')::int AS error_attempt FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(second.get("state")).isEqualTo("retryable");
            assertThat(asLong(second.get("attempt"))).isEqualTo(2);
            assertThat(asLong(second.get("errors"))).as("history keeps the earlier error").isEqualTo(2);
            assertThat((String) second.get("message")).contains("thrown on attempt 2");
            assertThat(asLong(second.get("error_attempt"))).isEqualTo(2);
            assertThat(delaySeconds(db, id, 2)).as("backoff after attempt 2: 4 s plus up to 25 %")
                    .isBetween(4.0 - SAME_STATEMENT_SLACK, 5.0 + SAME_STATEMENT_SLACK);

            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id);
            await("three results", () -> results.size() == 3);

            Map<String, Object> done = row(db, "SELECT state::text AS state, attempt, run_lease, "
                    + "jsonb_array_length(payload->'errors') AS errors FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(done.get("state")).isEqualTo("completed");
            assertThat(asLong(done.get("attempt"))).isEqualTo(3);
            assertThat(asLong(done.get("run_lease"))).isEqualTo(3);
            assertThat(asLong(done.get("errors"))).as("error history survives promotion").isEqualTo(2);

            assertThat(List.copyOf(seen)).containsExactly(new Seen(id, 1, 1), new Seen(id, 2, 2), new Seen(id, 3, 3));
            List<JobResult> rs = List.copyOf(results);
            assertThat(rs).allMatch(JobResult::accepted);
            assertThat(rs.get(0).outcome()).isInstanceOf(JobOutcome.Retry.class);
            assertThat(rs.get(1).outcome()).isInstanceOf(JobOutcome.Retry.class);
            assertThat(rs.get(2).outcome()).isInstanceOf(JobOutcome.Complete.class);
            for (long lease = 1; lease <= 3; lease++) {
                assertThat(closuresOf(db, id, lease)).as("closures of attempt %d", lease).isEqualTo(1);
            }
            // Each promotion re-appended the job with the previous attempt's lease and count; none was rewritten.
            assertThat(db.queryRows("SELECT attempt, run_lease FROM ready_entries WHERE job_id = ? ORDER BY run_lease", id))
                    .extracting(r -> asLong(r.get("attempt")) + "/" + asLong(r.get("run_lease")))
                    .containsExactly("0/0", "1/1", "2/2");
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void backoffJitterStaysWithinAQuarterOfTheBaseAndActuallyVaries() {
        int n = 40;
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("jitter", job -> Mono.error(new RuntimeException("no"))), 16, "jitter")
                .subscribe();
        try {
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                jobs.add(NewJob.builder("jitter").queue("jitter").maxAttempts(3).build());
            }
            riffle.client().enqueueMany(jobs).block(TIMEOUT);
            awaitCount(db, n, "SELECT count(*) FROM deferred_jobs WHERE queue = 'jitter' AND state = 'retryable'");
            List<Double> delays = db.queryRows("SELECT extract(epoch FROM d.run_at - c.closed_at) AS s "
                            + "FROM deferred_jobs d "
                            + "JOIN lease_claim_batches b ON b.queue = d.queue "
                            + "CROSS JOIN generate_subscripts(b.job_ids, 1) i "
                            + "JOIN lease_claim_closure_batches c ON c.receipt_ranges @> b.receipt_ids[i] "
                            + "WHERE d.queue = 'jitter' AND b.job_ids[i] = d.job_id")
                    .stream().map(r -> ((Number) r.get("s")).doubleValue()).toList();
            assertThat(delays).hasSize(n);
            assertThat(delays).allSatisfy(d -> assertThat(d).isBetween(2.0 - SAME_STATEMENT_SLACK, 2.5 + SAME_STATEMENT_SLACK));
            double min = delays.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
            double max = delays.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
            // Forty draws from U[0, 0.5 s] spread by far more than this unless the jitter is missing.
            assertThat(max - min).as("jitter spread over %d retries", n).isGreaterThan(0.1);
        } finally {
            worker.dispose();
            // Other tests in this class assert exact promotion counts; these rows must not become due under them.
            db.execute("UPDATE deferred_jobs SET run_at = now() + interval '1 day' WHERE queue = 'jitter'");
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void anExplicitRetryDelayIsHonouredInsteadOfTheBackoff() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("later",
                        job -> Mono.just(JobOutcome.retry("upstream busy", Duration.ofMinutes(5)))), 2, "retry-later")
                .subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("later").queue("retry-later").build());
            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(delaySeconds(db, id, 1)).isCloseTo(300.0, within(SAME_STATEMENT_SLACK));
            Map<String, Object> d = row(db, "SELECT state::text AS state, attempt, run_lease, "
                    + "payload->'errors'->0->>'message' AS message, (payload->'errors'->0->>'attempt')::int AS error_attempt "
                    + "FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(d.get("state")).isEqualTo("retryable");
            assertThat(asLong(d.get("attempt"))).isEqualTo(1);
            assertThat(asLong(d.get("run_lease"))).isEqualTo(1);
            assertThat(d.get("message")).isEqualTo("upstream busy");
            assertThat(asLong(d.get("error_attempt"))).isEqualTo(1);
            promote(riffle);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).as("not due for five minutes")
                    .isEqualTo(1);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void theErrorHistoryKeepsTheLastTenErrorsInOrderAndTheRunLeaseKeepsGrowing() {
        int failures = 12;
        Riffle riffle = OutcomeKit.start(db);
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        // A zero delay makes each retry due at once, so the loop below needs no waiting beyond the round trips.
        JobHandler failing = job -> {
            seen.add(seen(job));
            return Mono.just(JobOutcome.retry("failure #" + job.attempt(), Duration.ZERO));
        };
        Disposable worker = riffle.work(Map.of("history", failing), 2, "history").subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("history").queue("history").maxAttempts(failures + 1).build());
            for (int attempt = 1; attempt <= failures; attempt++) {
                awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND attempt = ?", id, attempt);
                if (attempt < failures) {
                    assertThat(promote(riffle)).isEqualTo(1);
                }
            }
            List<Map<String, Object>> errors = db.queryRows("SELECT e->>'message' AS message, (e->>'attempt')::int AS attempt, "
                    + "e->>'at' AS at FROM deferred_jobs d, jsonb_array_elements(d.payload->'errors') e WHERE d.job_id = ?", id);
            assertThat(errors).extracting(e -> e.get("message"))
                    .as("the ten most recent errors, oldest first")
                    .containsExactly("failure #3", "failure #4", "failure #5", "failure #6", "failure #7", "failure #8",
                            "failure #9", "failure #10", "failure #11", "failure #12");
            assertThat(errors).extracting(e -> asLong(e.get("attempt"))).containsExactly(3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L);
            assertThat(errors).allSatisfy(e -> assertThat(e.get("at")).isNotNull());
            assertThat(db.queryLong("SELECT run_lease FROM deferred_jobs WHERE job_id = ?", id)).isEqualTo(failures);
            List<Seen> attempts = List.copyOf(seen);
            assertThat(attempts).hasSize(failures);
            for (int i = 0; i < failures; i++) {
                assertThat(attempts.get(i).attempt()).isEqualTo(i + 1);
                assertThat(attempts.get(i).runLease()).as("run lease of delivery %d", i + 1).isEqualTo(i + 1);
            }
        } finally {
            worker.dispose();
            db.execute("UPDATE deferred_jobs SET run_at = now() + interval '1 day' WHERE queue = 'history'");
            OutcomeKit.close(riffle);
        }
    }
}
