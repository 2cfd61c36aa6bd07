package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A job whose kind has no handler fails terminally on its first attempt with a reason naming the kind, however many
 * attempts it was allowed: retrying cannot make a handler appear.
 */
@RiffleTest
class UnknownKindIT extends ProbeIT {
    @Test
    void aJobWithNoHandlerFailsOnceWithTheKindInTheReasonAndIsNotRetried() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("unknown-plain").withDlq(false)));
        Queue<JobResult> results = new ConcurrentLinkedQueue<>();
        Queue<String> handled = new ConcurrentLinkedQueue<>();
        JobHandler known = job -> {
            handled.add(job.kind());
            return Mono.empty();
        };
        Disposable worker = riffle.work(Map.of("known", known), 4, "unknown-dlq", "unknown-plain").subscribe(results::add);
        try {
            long toDlq = OutcomeKit.enqueue(riffle, NewJob.builder("mystery.kind").queue("unknown-dlq").maxAttempts(25).build());
            long toFailed = OutcomeKit.enqueue(riffle, NewJob.builder("other:kind").queue("unknown-plain").maxAttempts(25).build());
            long fine = OutcomeKit.enqueue(riffle, NewJob.builder("known").queue("unknown-dlq").build());

            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", toDlq);
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", toFailed);
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'", fine);
            await("three results", () -> results.size() == 3);

            Map<String, Object> d = row(db, "SELECT attempt, dlq_reason FROM dlq_entries WHERE job_id = ?", toDlq);
            assertThat((String) d.get("dlq_reason")).contains("mystery.kind");
            assertThat(asLong(d.get("attempt"))).isEqualTo(1);

            Map<String, Object> f = row(db, "SELECT state::text AS state, attempt, payload->'errors'->0->>'message' AS message "
                    + "FROM terminal_jobs WHERE job_id = ?", toFailed);
            assertThat(f.get("state")).isEqualTo("failed");
            assertThat(asLong(f.get("attempt"))).isEqualTo(1);
            assertThat((String) f.get("message")).contains("other:kind");

            for (long id : List.of(toDlq, toFailed)) {
                JobResult r = results.stream().filter(x -> x.jobId() == id).findFirst().orElseThrow();
                assertThat(r.accepted()).isTrue();
                assertThat(r.outcome()).isInstanceOfSatisfying(JobOutcome.Fail.class,
                        o -> assertThat(o.reason()).contains(r.kind()));
                assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).as("no retry scheduled").isZero();
                assertThat(claimsOf(db, id)).as("claimed once").isEqualTo(1);
                assertThat(closuresOf(db, id, 1)).isEqualTo(1);
            }
            assertThat(promote(riffle)).isZero();
            assertThat(List.copyOf(handled)).as("the registered handler saw only its own kind").containsExactly("known");
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }
}
