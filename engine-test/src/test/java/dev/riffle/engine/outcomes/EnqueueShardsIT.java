package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Enqueue shards (docs/design/delivery-contract.md#enqueue-shards): a queue's jobs spread over its shards, each
 * shard a lane of its own, every job claimed exactly once; and a producer transaction left open holds one shard,
 * so other producers and promotion pass it instead of queueing behind it.
 */
@RiffleTest
class EnqueueShardsIT extends ProbeIT {

    /** Delivers exactly {@code ids.size()} jobs of {@code queue}, completing each, and checks they are {@code ids}. */
    private static void deliverExactly(Riffle riffle, String queue, Set<Long> ids) {
        List<Job> got = riffle.subscribe(queue).flatMap((Job j) -> j.complete().thenReturn(j), 32, 1)
                .take(ids.size()).collectList().block(TIMEOUT);
        Set<Long> seen = new HashSet<>();
        for (Job j : got) {
            assertThat(seen.add(j.id())).as("job %d delivered twice", j.id()).isTrue();
        }
        assertThat(seen).containsExactlyInAnyOrderElementsOf(ids);
    }

    /** A queue nobody configured gets the schema's default, eight (V13; docs/benchmarks.md "Session 10"). */
    @Test
    void aNewQueueWithoutAConfiguredCountGetsEightShards() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            Set<Long> ids = new HashSet<>();
            for (int i = 0; i < 64; i++) {
                ids.add(OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("sd").build()));
            }
            assertThat(db.queryLong("SELECT enqueue_shards FROM queue_meta WHERE queue = 'sd'")).isEqualTo(8);
            assertThat(db.queryLong("SELECT count(DISTINCT enqueue_shard) FROM ready_entries WHERE queue = 'sd'"))
                    .as("shards used by 64 transactions").isEqualTo(8);
            deliverExactly(riffle, "sd", ids);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aQueuesJobsSpreadOverItsShardsAndEachIsClaimedOnce() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("sa").withEnqueueShards(4)));
        try {
            assertThat(db.queryLong("SELECT enqueue_shards FROM queue_meta WHERE queue = 'sa'"))
                    .as("the configured count is recorded at start").isEqualTo(4);
            Set<Long> ids = new HashSet<>();
            // One call per job, so each is its own transaction and lands on that transaction's shard.
            for (int i = 0; i < 40; i++) {
                ids.add(OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("sa").build()));
            }
            assertThat(db.queryLong("SELECT count(DISTINCT enqueue_shard) FROM ready_entries WHERE queue = 'sa'"))
                    .as("shards used by 40 transactions").isEqualTo(4);
            assertThat(db.queryLong("SELECT count(*) FROM queue_claim_heads WHERE queue = 'sa'"))
                    .as("one lane per shard").isEqualTo(4);

            deliverExactly(riffle, "sa", ids);
            for (long id : ids) {
                assertThat(claimsOf(db, id)).as("claims of job %d", id).isEqualTo(1);
            }
            assertThat(riffle.subscribe("sa").take(Duration.ofMillis(500)).collectList().block(TIMEOUT))
                    .as("nothing else is delivered").isEmpty();
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void otherProducersPassAShardHeldByAnOpenProducerTransaction() throws Exception {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("sb").withEnqueueShards(2)));
        try (Connection producer = database.openJdbc()) {
            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, "sb");
            // With one shard every one of these would wait for the open producer's reservation lock.
            CompletableFuture<List<Long>> others = Flux.range(0, 20)
                    .concatMap(i -> riffle.client().enqueue(NewJob.builder("k").queue("sb").build()))
                    .collectList().toFuture();
            List<Long> committed = others.get(10, TimeUnit.SECONDS);
            assertThat(committed).hasSize(20);
            // The shard whose reservation lock the producer's backend holds, read from pg_locks.
            // This producer's own backend: other sessions on the server (other suites) may hold open enqueues too.
            long producerPid;
            try (var st = producer.createStatement(); var rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                producerPid = rs.getLong(1);
            }
            List<Long> heldShards = db.queryRows("SELECT s FROM generate_series(0, 1) s WHERE EXISTS (SELECT 1 FROM "
                    + "pg_locks l WHERE l.locktype = 'advisory' AND l.pid = ?::int AND l.granted AND "
                    + "((l.classid::bigint << 32) | l.objid::bigint) = lane_lock_key('sb', ?::smallint, s::smallint))",
                    producerPid, NewJob.DEFAULT_PRIORITY).stream().map(r -> ((Number) r.get("s")).longValue()).toList();
            assertThat(heldShards).as("the producer holds one shard").hasSize(1);
            List<Long> committedShards = db.queryRows("SELECT DISTINCT enqueue_shard AS s FROM ready_entries "
                    + "WHERE queue = 'sb'").stream().map(r -> ((Number) r.get("s")).longValue()).toList();
            assertThat(committedShards).as("the committed jobs sit on the shard nobody holds")
                    .hasSize(1).doesNotContainAnyElementsOf(heldShards);

            deliverExactly(riffle, "sb", new HashSet<>(committed));
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", held))
                    .as("the open producer's job is not visible").isZero();

            // The finished subscription may still have a claim in flight (started before its cancel): let it
            // return (and give back what it took) before the held job becomes visible, or it could claim the job
            // only to release it, and the job would show two claims.
            await("no claim in flight", () -> riffle.stats().claimsRunning() == 0);
            producer.commit();
            deliverExactly(riffle, "sb", Set.of(held));
            assertThat(claimsOf(db, held)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void promotionPassesAShardHeldByAnOpenProducerTransaction() throws Exception {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("sc").withEnqueueShards(2))
                .maintenance(MaintenanceConfig.builder().promotionInterval(Duration.ofMillis(100))
                        .leaderRetry(Duration.ofMillis(200)).build()));
        try (Connection producer = database.openJdbc()) {
            await("a maintenance leader", () -> riffle.maintenance().isLeader());
            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, "sc");
            List<Long> due = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                due.add(OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("sc")
                        .runAt(Instant.now().plusMillis(300)).build()));
            }
            // Promoted on time through the other shard while the producer still holds its own.
            OutcomeKit.awaitCount(db, 0, "SELECT count(*) FROM deferred_jobs WHERE queue = 'sc'");
            deliverExactly(riffle, "sc", new HashSet<>(due));
            await("no claim in flight", () -> riffle.stats().claimsRunning() == 0);
            producer.commit();
            deliverExactly(riffle, "sc", Set.of(held));
            for (long id : due) {
                assertThat(claimsOf(db, id)).as("claims of job %d", id).isEqualTo(1);
            }
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
