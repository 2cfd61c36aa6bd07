package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A partially expired batch: only open members get deadline_expired; the cursor does not skip the batch early. */
@RiffleTest
class DeadlineRescueIT {

    @Test
    void onlyOpenMembersExpireAndAPartlyRescuedBatchHoldsTheCursor(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db, b -> b.queue(Fixtures.deadline("dl", Duration.ofSeconds(1))));
        try {
            Fixtures.enqueue(riffle, "dl", 4);
            List<Job> jobs = Fixtures.claim(riffle, "dl", 4);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = 'dl'")).isEqualTo(1);
            long batchId = db.queryLong("SELECT batch_id FROM lease_claim_batches WHERE queue = 'dl'");
            jobs.get(0).complete().block(Fixtures.TIMEOUT);
            jobs.get(1).complete().block(Fixtures.TIMEOUT);
            // Nothing expires before the deadline (database clock).
            assertThat(riffle.maintenance().rescueDeadlinesNow().block(Fixtures.TIMEOUT)).isEmpty();
            Fixtures.await("deadline passed", () -> db.queryLong(
                    "SELECT count(*) FROM lease_claim_batches WHERE queue = 'dl' AND deadline_at < clock_timestamp()") == 1);

            Job held = jobs.get(3);
            try (Connection completion = Fixtures.holdAttemptLock(db, held.id(), held.runLease())) {
                List<RescuedAttempt> first = riffle.maintenance().rescueDeadlinesNow().block(Fixtures.TIMEOUT);
                assertThat(first).extracting(RescuedAttempt::jobId).containsExactly(jobs.get(2).id());
                // One member is still open, so the cursor must not have passed the batch.
                assertThat(db.queryLong("SELECT batch_deadline_cursor_batch_id FROM claim_ring_slots WHERE slot = 0"))
                        .isLessThan(batchId);
                completion.rollback();
            }
            List<RescuedAttempt> second = riffle.maintenance().rescueDeadlinesNow().block(Fixtures.TIMEOUT);
            assertThat(second).extracting(RescuedAttempt::jobId).containsExactly(held.id());
            assertThat(db.queryLong("SELECT batch_deadline_cursor_batch_id FROM claim_ring_slots WHERE slot = 0"))
                    .isEqualTo(batchId);

            assertThat(db.queryLong("SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches "
                    + "WHERE outcome = 'deadline_expired'")).isEqualTo(2);
            assertThat(db.queryLong("SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches "
                    + "WHERE outcome = 'completed'")).isEqualTo(2);
            assertThat(Fixtures.doubleClosures(db)).isZero();
            assertThat(Fixtures.openClaims(db)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE state = 'retryable' "
                    + "AND payload->'errors'->0->>'message' = 'hard deadline exceeded'")).isEqualTo(2);
            // The rescued workers were told: their handlers' cancellation signal fires.
            Fixtures.await("cancellation signalled", () -> jobs.get(2).isCancelled() && held.isCancelled());
            assertThat(jobs.get(0).isCancelled()).isFalse();
        } finally {
            Fixtures.close(riffle);
        }
    }
}
