package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.util.Map;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The DLQ policy is read from one place by every exit path, seen from the facade (DlqPolicyOneSourceIT covers the
 * rescue exits and the repeated close) (docs/design/delivery-contract.md, DLQ policy): the
 * queue's policy recorded in the schema, where the last engine to start wins for every engine alike; an engine's
 * {@code dlqByDefault} decides only for a queue with no recorded policy. Counts jobs by id in dlq_entries and in the
 * terminal history.
 */
@RiffleTest
class DlqRecordedPolicyIT extends ProbeIT {

    private static Disposable failEverything(Riffle riffle, String queue) {
        return riffle.work(Map.of("doomed", job -> Mono.just(JobOutcome.fail("rejected " + job.id()))), 4, queue)
                .subscribe();
    }

    private long inDlq(long id) {
        return db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id);
    }

    private long failedTerminal(long id) {
        return db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state::text = 'failed'", id);
    }

    @Test
    void theLastEngineToStartDecidesForTheHandlerExitsOfAnEngineConfiguredOtherwise() {
        Riffle a = null;
        Riffle b = null;
        Disposable worker = null;
        try {
            a = OutcomeKit.start(db, c -> c.queue(QueueConfig.of("policy-clash2").withDlq(false)));
            b = OutcomeKit.start(db, c -> c.queue(QueueConfig.of("policy-clash2").withDlq(true)));
            // Only A works the queue: its handler exits must follow the policy B recorded last, not A's own config.
            worker = failEverything(a, "policy-clash2");
            long id = OutcomeKit.enqueue(a, NewJob.builder("doomed").queue("policy-clash2").build());
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", id);
            assertThat(failedTerminal(id)).as("a DLQ'd job has no failed terminal row as well").isZero();
            assertThat(a.config().dlqFor("policy-clash2")).as("A's own configuration still says no").isFalse();
        } finally {
            if (worker != null) {
                worker.dispose();
            }
            OutcomeKit.close(a, b);
        }
    }

    @Test
    void aRecordedPolicyOverridesTheDefaultOfTheEngineRunningTheExit() {
        Riffle a = null;
        Riffle b = null;
        Disposable worker = null;
        try {
            // B records "no DLQ" for the queue; A has no opinion on it and a default of "DLQ".
            b = OutcomeKit.start(db, c -> c.queue(QueueConfig.of("policy-recorded2").withDlq(false)));
            a = OutcomeKit.start(db, c -> c.dlqByDefault(true));
            worker = failEverything(a, "policy-recorded2");
            long id = OutcomeKit.enqueue(a, NewJob.builder("doomed").queue("policy-recorded2").build());
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state::text = 'failed'", id);
            assertThat(inDlq(id)).isZero();
        } finally {
            if (worker != null) {
                worker.dispose();
            }
            OutcomeKit.close(a, b);
        }
    }

    @Test
    void aQueueWithNoRecordedPolicyFollowsTheDefaultOfTheEngineRunningTheExit() {
        Riffle a = null;
        Disposable worker = null;
        try {
            a = OutcomeKit.start(db, c -> c.dlqByDefault(false));
            worker = failEverything(a, "policy-none2");
            long id = OutcomeKit.enqueue(a, NewJob.builder("doomed").queue("policy-none2").build());
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state::text = 'failed'", id);
            assertThat(inDlq(id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM queue_meta WHERE queue = 'policy-none2' AND dlq_enabled IS NULL"))
                    .as("the lane's queue_meta row exists and records no policy").isEqualTo(1);
        } finally {
            if (worker != null) {
                worker.dispose();
            }
            OutcomeKit.close(a);
        }
    }
}
