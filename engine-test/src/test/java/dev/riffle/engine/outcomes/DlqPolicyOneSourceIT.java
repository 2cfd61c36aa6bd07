package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * A queue's DLQ policy has one source, the one recorded in {@code queue_meta}, and every exit reads it there
 * (docs/design/delivery-contract.md, "DLQ policy"): when two engines configure a queue differently, the one that
 * started last decides for the handler exits of both engines and for rescue alike; a queue nobody configured
 * follows the default of the engine that closes the attempt.
 */
@RiffleTest
class DlqPolicyOneSourceIT extends ProbeIT {

    /**
     * Maintenance off, and heartbeats far apart, so an attempt the test holds is stale at once for
     * {@code rescueStaleNow(Duration.ZERO)} and nothing else rescues it.
     */
    private Riffle engine(Consumer<RiffleConfig.Builder> tweak) {
        return OutcomeKit.start(db, b -> {
            b.maintenance(OutcomeKit.manualMaintenance().heartbeatInterval(Duration.ofHours(1))
                    .staleAfter(Duration.ofHours(3)).build());
            tweak.accept(b);
        });
    }

    private static Job claimOne(Riffle riffle, String queue, long expectedId) {
        Job job = riffle.subscribe(queue).blockFirst(TIMEOUT);
        assertThat(job.id()).isEqualTo(expectedId);
        return job;
    }

    private long dlqEntries(long jobId) {
        return db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", jobId);
    }

    private long failedEntries(long jobId) {
        return db.queryLong("SELECT count(*) FROM done_entries WHERE job_id = ? AND state = 'failed'", jobId);
    }

    @Test
    void thePolicyRecordedLastDecidesForTheHandlerExitsOfAnEarlierEngineAndForRescue() {
        // A says "no DLQ" for both queues and by default; B, started later on the same schema, says "DLQ".
        Riffle a = engine(b -> b.dlqByDefault(false)
                .queue(QueueConfig.of("dos-compact").withDlq(false))
                .queue(QueueConfig.of("dos-leased").withMaterializedLeases().withDlq(false)));
        Riffle b = engine(c -> c.dlqByDefault(false)
                .queue(QueueConfig.of("dos-compact").withDlq(true)).queue(QueueConfig.of("dos-leased").withDlq(true)));
        try {
            assertThat(db.queryLong("SELECT count(*) FROM queue_meta WHERE queue IN ('dos-compact', 'dos-leased')"
                    + " AND dlq_enabled")).as("B's policy is the recorded one").isEqualTo(2);
            assertThat(a.config().dlqFor("dos-compact")).as("dlqFor answers from A's own configuration").isFalse();

            // A's handler fails a compact attempt terminally.
            long failed = OutcomeKit.enqueue(a, NewJob.builder("k").queue("dos-compact").maxAttempts(3).build());
            claimOne(a, "dos-compact", failed).fail("rejected by A").block(TIMEOUT);
            assertThat(dlqEntries(failed)).as("A's fail follows B's recorded policy").isEqualTo(1);
            assertThat(failedEntries(failed)).isZero();

            // A's handler retries its last attempt: exhausted.
            long exhausted = OutcomeKit.enqueue(a, NewJob.builder("k").queue("dos-compact").maxAttempts(1).build());
            claimOne(a, "dos-compact", exhausted).retry("boom").block(TIMEOUT);
            assertThat(dlqEntries(exhausted)).as("A's exhausted retry follows B's recorded policy").isEqualTo(1);
            assertThat(failedEntries(exhausted)).isZero();

            // The same through the general path: a leased attempt of a materialized queue (row-local claim).
            long leased = OutcomeKit.enqueue(a, NewJob.builder("k").queue("dos-leased").maxAttempts(3).build());
            Job leasedJob = claimOne(a, "dos-leased", leased);
            assertThat(((ClaimedJob) leasedJob).isLeased()).isTrue();
            leasedJob.fail("rejected by A").block(TIMEOUT);
            assertThat(dlqEntries(leased)).as("A's fail of a leased attempt follows B's recorded policy").isEqualTo(1);
            assertThat(failedEntries(leased)).isZero();

            // Rescue of A's abandoned last attempt, run by A itself, whose own configuration says "no DLQ" twice.
            long rescued = OutcomeKit.enqueue(a, NewJob.builder("k").queue("dos-compact").maxAttempts(1).build());
            Job abandoned = claimOne(a, "dos-compact", rescued);
            List<RescuedAttempt> r = a.maintenance().rescueStaleNow(Duration.ZERO).block(TIMEOUT);
            assertThat(r).singleElement().satisfies(x -> {
                assertThat(x.jobId()).isEqualTo(rescued);
                assertThat(x.disposition()).isEqualTo("dlq");
            });
            assertThat(dlqEntries(rescued)).as("rescue follows B's recorded policy").isEqualTo(1);
            assertThat(failedEntries(rescued)).isZero();
            // The worker's late outcome finds the rescue's closure (and leaves no attempt in flight).
            assertThatThrownBy(() -> abandoned.fail("too late").block(TIMEOUT))
                    .isInstanceOfSatisfying(AttemptRejectedException.class,
                            e -> assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED));
        } finally {
            OutcomeKit.close(a, b);
        }
    }

    @Test
    void aQueueWithNoRecordedPolicyFollowsTheDefaultOfTheEngineThatClosesIt() {
        Riffle off = engine(b -> b.dlqByDefault(false));
        Riffle on = engine(b -> b.dlqByDefault(true));
        try {
            assertThat(db.queryLong("SELECT count(*) FROM queue_meta WHERE queue = 'dos-unset' AND dlq_enabled IS NOT NULL"))
                    .isZero();
            long viaOff = OutcomeKit.enqueue(off, NewJob.builder("k").queue("dos-unset").build());
            claimOne(off, "dos-unset", viaOff).fail("no").block(TIMEOUT);
            long viaOn = OutcomeKit.enqueue(on, NewJob.builder("k").queue("dos-unset").build());
            claimOne(on, "dos-unset", viaOn).fail("no").block(TIMEOUT);

            assertThat(failedEntries(viaOff)).as("closed by the engine whose default is off").isEqualTo(1);
            assertThat(dlqEntries(viaOff)).isZero();
            assertThat(dlqEntries(viaOn)).as("closed by the engine whose default is on").isEqualTo(1);
            assertThat(failedEntries(viaOn)).isZero();
        } finally {
            OutcomeKit.close(off, on);
        }
    }

    /**
     * A retried flush must recognise its own earlier closure: the {@code applied_before} check resolves the policy
     * as the close did, not from the flag the caller sent. Driven in SQL, with the flag A sends (its default, off),
     * for both claim shapes.
     */
    @Test
    void aRepeatedCloseRecognisesTheDlqClosureItWroteUnderTheRecordedPolicy() {
        Riffle a = engine(b -> b.dlqByDefault(false)
                .queue(QueueConfig.of("dos-again").withDlq(false))
                .queue(QueueConfig.of("dos-again-leased").withMaterializedLeases().withDlq(false)));
        Riffle b = engine(c -> c.dlqByDefault(false)
                .queue(QueueConfig.of("dos-again").withDlq(true)).queue(QueueConfig.of("dos-again-leased").withDlq(true)));
        try {
            String close = "SELECT status, disposition FROM close_attempts(ARRAY[?::int], ARRAY[?::bigint], ARRAY[?::int],"
                    + " ARRAY[?::bigint], ARRAY[?::bigint], ARRAY[?::bigint], ARRAY['fail'], ARRAY[NULL::bigint],"
                    + " ARRAY['rejected'], ARRAY[false], ARRAY[?::boolean])";
            for (String queue : List.of("dos-again", "dos-again-leased")) {
                long id = OutcomeKit.enqueue(a, NewJob.builder("k").queue(queue).maxAttempts(3).build());
                ClaimedJob job = (ClaimedJob) claimOne(a, queue, id);
                Receipt r = job.receipt();
                Object[] args = {r.claimSlot(), r.batchId(), r.batchIndex(), id, job.runLease(), r.receiptId(),
                        job.isLeased()};

                List<Map<String, Object>> first = db.queryRows(close, args);
                assertThat(first).as("first close of %s", queue).singleElement().satisfies(x -> {
                    assertThat(x.get("status")).isEqualTo("applied");
                    assertThat(x.get("disposition")).isEqualTo("dlq");
                });
                // The lease is gone with the first close; a retried flush still says what it sent the first time.
                List<Map<String, Object>> again = db.queryRows(close, args);
                assertThat(again).as("repeated close of %s", queue).singleElement()
                        .satisfies(x -> assertThat(x.get("status")).isEqualTo("applied_before"));
                assertThat(dlqEntries(id)).isEqualTo(1);
                // The engine's own outcome is a first try that finds the attempt closed: rejected, nothing in flight.
                assertThatThrownBy(() -> job.fail("rejected").block(TIMEOUT))
                        .isInstanceOf(AttemptRejectedException.class);
            }
        } finally {
            OutcomeKit.close(a, b);
        }
    }
}
