package dev.riffle.engine.unique;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.EnqueueResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/** Concurrent producers of one unique key make exactly one job; a producer whose claim is in flight is waited for. */
@RiffleTest
class UniqueRaceIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int PRODUCERS = 8;

    private static NewJob job(String key) {
        return NewJob.builder("unique.race").queue("race").args("{\"key\":\"" + key + "\"}")
                .unique(UniqueOptions.byArgs("key")).build();
    }

    @Test
    void eightConcurrentProducersOfOneKeyMakeOneJobAndSevenDuplicatesOfIt(Riffle riffle, TestDatabase db) {
        // 25 rounds, each a fresh key enqueued by 8 producers at once on 8 pooled connections.
        for (int round = 0; round < 25; round++) {
            String key = "k" + round;
            List<EnqueueResult> results = Flux.range(0, PRODUCERS)
                    .flatMap(i -> riffle.client().enqueueWithResult(job(key)).subscribeOn(Schedulers.parallel()),
                            PRODUCERS)
                    .collectList().block(TIMEOUT);
            assertThat(results).hasSize(PRODUCERS);
            Set<Long> ids = results.stream().map(EnqueueResult::jobId).collect(Collectors.toSet());
            assertThat(ids).as("round %d: every producer got the one job's id", round).hasSize(1);
            assertThat(results.stream().filter(r -> !r.duplicate()).count()).as("round %d: one creator", round)
                    .isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE kind = 'unique.race' AND args->>'key' = ?",
                    key)).as("round %d: jobs in the database", round).isEqualTo(1);
            assertThat(db.queryLong("SELECT job_id FROM job_unique_claims c JOIN ready_entries r USING (job_id) "
                    + "WHERE r.args->>'key' = ?", key)).isEqualTo(ids.iterator().next());
        }
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE kind = 'unique.race'")).isEqualTo(25);
    }

    @Test
    void eightConcurrentProducersTakingOverAReleasedKeyMakeOneJob(Riffle riffle, TestDatabase db) {
        String key = "released";
        long owner = riffle.client().enqueue(job(key)).block(TIMEOUT);
        for (int round = 0; round < 15; round++) {
            // Cancelling by id releases the key lazily: the claim row still names the cancelled owner.
            riffle.admin().cancel(owner).block(TIMEOUT);
            List<EnqueueResult> results = Flux.range(0, PRODUCERS)
                    .flatMap(i -> riffle.client().enqueueWithResult(job(key)).subscribeOn(Schedulers.parallel()),
                            PRODUCERS)
                    .collectList().block(TIMEOUT);
            Set<Long> ids = results.stream().map(EnqueueResult::jobId).collect(Collectors.toSet());
            assertThat(ids).as("round %d: one job for the released key", round).hasSize(1);
            assertThat(ids).doesNotContain(owner);
            assertThat(results.stream().filter(r -> !r.duplicate()).count()).as("round %d", round).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE args->>'key' = ?", key))
                    .as("round %d: the cancelled owners and one live job", round).isEqualTo(round + 2);
            owner = ids.iterator().next();
        }
    }

    @Test
    void aProducerWaitsForAnInFlightClaimAndIsADuplicateIfItCommitsOrTheCreatorIfItRollsBack(Riffle riffle,
                                                                                              TestDatabase db)
            throws Exception {
        for (boolean commit : new boolean[] {true, false}) {
            String key = commit ? "inflight-commit" : "inflight-rollback";
            try (Connection first = db.openJdbc()) {
                first.setAutoCommit(false);
                long firstId;
                try (Statement st = first.createStatement();
                     ResultSet rs = st.executeQuery("SELECT job_id, duplicate FROM enqueue_unique_jobs(ARRAY['race'], "
                             + "ARRAY['unique.race'], ARRAY['{\"key\":\"" + key + "\"}']::jsonb[], ARRAY[2]::smallint[], "
                             + "ARRAY[25]::smallint[], ARRAY[NULL]::timestamptz[], ARRAY['[\"key\"]']::jsonb[], "
                             + "ARRAY[NULL]::text[], ARRAY[NULL]::bigint[], "
                             + "ARRAY['{available,retryable,running,scheduled}'])")) {
                    assertThat(rs.next()).isTrue();
                    firstId = rs.getLong(1);
                    assertThat(rs.getBoolean(2)).isFalse();
                }
                CompletableFuture<EnqueueResult> second = riffle.client().enqueueWithResult(job(key)).toFuture();
                // The second producer's claim insert waits on the first's uncommitted claim of the same key.
                Thread.sleep(300);
                assertThat(second).as("waits for the in-flight claim").isNotDone();
                if (commit) {
                    first.commit();
                } else {
                    first.rollback();
                }
                EnqueueResult r = second.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
                if (commit) {
                    assertThat(r).isEqualTo(new EnqueueResult(firstId, true));
                } else {
                    assertThat(r.duplicate()).isFalse();
                    assertThat(r.jobId()).isNotEqualTo(firstId);
                }
                assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE args->>'key' = ?", key)).isEqualTo(1);
            }
        }
    }
}
