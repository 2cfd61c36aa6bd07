package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Lost post-commit cursor advance (DESIGN.md §5.2.5): the next claim never re-delivers the claimed prefix. */
@RiffleTest
class LostCursorAdvanceIT {

    private static long claimCursor(TestDatabase db, String queue) {
        return db.queryLong("SELECT seq_next(seq_name) FROM queue_claim_heads WHERE queue = ?", queue);
    }

    /** Claims through the raw function, which commits the claim but never advances the cursor. */
    private static Set<Long> rawClaim(TestDatabase db, String queue, int n) {
        Set<Long> ids = new HashSet<>();
        for (var row : db.queryRows("SELECT job_id FROM claim_ready(ARRAY[?]::text[], ARRAY[0], ?)", queue, n)) {
            ids.add(((Number) row.get("job_id")).longValue());
        }
        return ids;
    }

    @Test
    void theNextClaimSkipsTheAlreadyClaimedPrefixUsingEvidence(TestDatabase db) {
        Riffle riffle = Fixtures.manual(db);
        try {
            List<Long> ids = Fixtures.enqueue(riffle, "lost", 10);
            Set<Long> first = rawClaim(db, "lost", 3);
            assertThat(first).hasSize(3);
            assertThat(claimCursor(db, "lost")).as("a claim never moves the cursor over its own rows").isEqualTo(1);
            Set<Long> second = rawClaim(db, "lost", 2);
            assertThat(second).hasSize(2).doesNotContainAnyElementsOf(first);
            // The second claim healed the cursor over the first claim's evidence, but not over its own rows.
            assertThat(claimCursor(db, "lost")).isEqualTo(4);

            List<Job> rest = Fixtures.claim(riffle, "lost", 5);
            Set<Long> restIds = new HashSet<>();
            rest.forEach(j -> restIds.add(j.id()));
            assertThat(restIds).hasSize(5).doesNotContainAnyElementsOf(first).doesNotContainAnyElementsOf(second);
            Set<Long> all = new HashSet<>(first);
            all.addAll(second);
            all.addAll(restIds);
            assertThat(all).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches b, unnest(b.job_ids) j")).isEqualTo(10);
        } finally {
            Fixtures.close(riffle);
        }
    }

    @Test
    void aGapAtTheCursorFromAnAbortedEnqueuePlusALostAdvanceDoesNotWedgeTheLane(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db);
        try {
            // Lane positions 1..2 are reserved by an enqueue that rolls back: a permanent gap at the cursor.
            Fixtures.enqueue(riffle, "gap", 1); // creates the lane and takes position 1
            Set<Long> claimed = rawClaim(db, "gap", 1); // claims position 1 without advancing
            assertThat(claimed).hasSize(1);
            try (Connection c = db.openJdbc()) {
                c.setAutoCommit(false);
                try (Statement st = c.createStatement()) {
                    st.execute("SELECT enqueue_jobs(ARRAY['gap','gap'], ARRAY['k','k'], ARRAY['{}','{}']::jsonb[], "
                            + "ARRAY[2,2]::smallint[], ARRAY[25,25]::smallint[], ARRAY[NULL,NULL]::timestamptz[])");
                }
                c.rollback();
            }
            List<Long> later = riffle.client().enqueueMany(List.of(NewJob.builder("k").queue("gap").build(),
                    NewJob.builder("k").queue("gap").build())).block(Fixtures.TIMEOUT);
            List<Job> got = Fixtures.claim(riffle, "gap", 2);
            assertThat(got).extracting(Job::id).containsExactlyElementsOf(later);
            assertThat(got).extracting(Job::id).doesNotContainAnyElementsOf(claimed);
        } finally {
            Fixtures.close(riffle);
        }
    }
}
