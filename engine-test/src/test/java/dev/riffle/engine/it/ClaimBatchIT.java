package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A claim of k jobs writes exactly one compact claim batch row with k items, one claimed_at and one deadline_at. */
@RiffleTest
class ClaimBatchIT {

    @Test
    void oneClaimOfKJobsWritesOneCompactBatchWithoutDeadline(TestDatabase db) {
        Riffle riffle = Engines.start(db);
        try {
            List<Long> ids = Engines.enqueue(riffle, "nodeadline", 7);
            List<Job> jobs = riffle.subscribe("nodeadline").take(7).collectList().block(Engines.TIMEOUT);
            assertThat(jobs).extracting(Job::id).containsExactlyElementsOf(ids);

            List<Map<String, Object>> batches = db.queryRows(
                    "SELECT claimed_count, cardinality(job_ids) AS n, deadline_at, claimed_at, receipt_ranges::text AS ranges "
                            + "FROM lease_claim_batches WHERE queue = 'nodeadline'");
            assertThat(batches).hasSize(1);
            Map<String, Object> b = batches.get(0);
            assertThat(((Number) b.get("claimed_count")).intValue()).isEqualTo(7);
            assertThat(((Number) b.get("n")).intValue()).isEqualTo(7);
            assertThat(b.get("deadline_at")).isNull();
            // Columns a batch shares come on its first row only (hotpath.sql "claim"): every job still carries them.
            assertThat(jobs).allSatisfy(j -> {
                assertThat(j.queue()).isEqualTo("nodeadline");
                assertThat(j.priority()).isEqualTo(jobs.get(0).priority());
                assertThat(j.deadlineAt()).isEmpty();
                assertThat(j.claimedAt()).isEqualTo(jobs.get(0).claimedAt());
                assertThat(j.runLease()).isEqualTo(1);
                assertThat(j.attempt()).isEqualTo(1);
            });
            // The same transaction wrote one claim-attempt evidence row covering the same lane positions.
            assertThat(db.queryLong("SELECT count(*) FROM ready_claim_attempt_batches WHERE queue = 'nodeadline'")).isEqualTo(1);
            assertThat(db.queryLong("SELECT claimed_count FROM ready_claim_attempt_batches WHERE queue = 'nodeadline'")).isEqualTo(7);
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void aQueueWithADeadlineGetsOneSharedNonNullDeadline(TestDatabase db) {
        Riffle riffle = Engines.start(db, b -> b.queue(QueueConfig.withDeadline("withdeadline", Duration.ofSeconds(30))));
        try {
            Engines.enqueue(riffle, "withdeadline", 5);
            List<Job> jobs = riffle.subscribe("withdeadline").take(5).collectList().block(Engines.TIMEOUT);
            assertThat(jobs).hasSize(5);

            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE queue = 'withdeadline'")).isEqualTo(1);
            assertThat(db.queryLong("SELECT claimed_count FROM lease_claim_batches WHERE queue = 'withdeadline'")).isEqualTo(5);
            assertThat(db.queryLong("SELECT extract(epoch FROM deadline_at - claimed_at)::bigint FROM lease_claim_batches "
                    + "WHERE queue = 'withdeadline' AND deadline_at IS NOT NULL")).isEqualTo(30);
            assertThat(jobs).allSatisfy(j -> {
                assertThat(j.queue()).isEqualTo("withdeadline");
                assertThat(j.deadlineAt()).isPresent();
                assertThat(j.deadlineAt().get()).isEqualTo(jobs.get(0).deadlineAt().get());
                assertThat(Duration.between(j.claimedAt(), j.deadlineAt().get())).isEqualTo(Duration.ofSeconds(30));
            });
        } finally {
            Engines.close(riffle);
        }
    }
}
