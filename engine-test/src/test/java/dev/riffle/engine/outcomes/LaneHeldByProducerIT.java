package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A producer transaction that stays open holds its lane's reservation lock until it ends. Promotion, DLQ retry and
 * release must neither wait for it nor lose or duplicate anything because of it: jobs of other lanes move on time,
 * jobs of the held lane move once the producer has committed, and every job is delivered exactly once.
 */
@RiffleTest
class LaneHeldByProducerIT extends ProbeIT {
    /**
     * Every queue of this class has one enqueue shard, so an open producer holds the whole lane: what these tests
     * prove is what happens when every shard of a lane is held. Passing a held shard is EnqueueShardsIT's.
     */
    private static RiffleConfig.Builder oneShard(RiffleConfig.Builder b) {
        for (String q : List.of("ja", "jb", "jc", "jd", "jh", "jo", "jr")) {
            b.queue(QueueConfig.of(q).withEnqueueShards(1));
        }
        return b;
    }

    /** Maintenance on, promotion every 100 ms, so "promoted on time" is a matter of a few ticks. */
    private Riffle startWithPromotion() {
        Riffle riffle = OutcomeKit.start(db, b -> oneShard(b).maintenance(MaintenanceConfig.builder()
                .promotionInterval(Duration.ofMillis(100)).leaderRetry(Duration.ofMillis(200)).build()));
        await("a maintenance leader", () -> riffle.maintenance().isLeader());
        return riffle;
    }

    /** The producer's backend is still inside its transaction (it has neither committed nor rolled back). */
    private void assertStillOpen(Connection producer) throws SQLException {
        long pid;
        try (PreparedStatement ps = producer.prepareStatement("SELECT pg_backend_pid()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            pid = rs.getLong(1);
        }
        assertThat(db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?::int AND state = 'idle in transaction'", pid))
                .as("producer transaction still open").isEqualTo(1);
    }

    /** Delivers exactly {@code n} jobs of {@code queue}, completing each, then checks nothing else arrives. */
    private static Map<Long, Job> deliverAll(Riffle riffle, String queue, int n) {
        List<Job> got = riffle.subscribe(queue).flatMap((Job j) -> j.complete().thenReturn(j)).take(n)
                .collectList().block(TIMEOUT);
        Map<Long, Job> byId = new HashMap<>();
        for (Job j : got) {
            assertThat(byId.put(j.id(), j)).as("job %d delivered twice", j.id()).isNull();
        }
        List<Job> more = riffle.subscribe(queue).take(Duration.ofSeconds(1)).collectList().block(TIMEOUT);
        assertThat(more).as("nothing else is delivered").isEmpty();
        return byId;
    }

    @Test
    void anOpenProducerOnOneQueueDoesNotStallPromotionOfAnother() throws Exception {
        Riffle riffle = startWithPromotion();
        try (Connection producer = database.openJdbc()) {
            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, "ja");
            // A job of the held queue falls due first, so promotion's oldest-first batch reaches the held lane.
            long jaDue = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("ja").runAt(Instant.now().plusMillis(200)).build());
            Instant jbDue = Instant.now().plusSeconds(1);
            long jb = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("jb").runAt(jbDue).build());

            CompletableFuture<Job> first = riffle.subscribe("jb").next().toFuture();
            Job got = first.get(6, TimeUnit.SECONDS);
            Instant deliveredAt = Instant.now();
            assertThat(got.id()).isEqualTo(jb);
            assertThat(Duration.between(jbDue, deliveredAt)).as("delivered on time").isLessThan(Duration.ofSeconds(3));
            got.complete().block(TIMEOUT);
            assertStillOpen(producer);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", held)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", jaDue)).as("left for later").isEqualTo(1);

            producer.commit();
            Map<Long, Job> ja = deliverAll(riffle, "ja", 2);
            assertThat(ja.keySet()).containsExactlyInAnyOrder(held, jaDue);
            assertThat(claimsOf(db, held)).isEqualTo(1);
            assertThat(claimsOf(db, jaDue)).isEqualTo(1);
            assertThat(claimsOf(db, jb)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aHeldLaneWhoseDueBacklogFillsTheBatchDoesNotCrowdOutOtherLanes() throws Exception {
        // Batches of two and one batch per pass: the held lane alone has more due rows than a batch holds.
        Riffle riffle = OutcomeKit.start(db, b -> oneShard(b).maintenance(OutcomeKit.manualMaintenance()
                .promotionBatch(2).promotionMaxBatches(1).build()));
        try (Connection producer = database.openJdbc()) {
            Instant later = Instant.now().plus(Duration.ofHours(1));
            List<Long> held = new java.util.ArrayList<>();
            for (int i = 0; i < 3; i++) {
                held.add(OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("jh").runAt(later).build()));
            }
            long other = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("jo").runAt(later).build());
            // The held lane's rows are the oldest due ones.
            db.execute("UPDATE deferred_jobs SET run_at = now() - interval '1 hour' WHERE queue = 'jh'");
            db.execute("UPDATE deferred_jobs SET run_at = now() - interval '1 second' WHERE queue = 'jo'");
            producer.setAutoCommit(false);
            long inTx = OutcomeKit.enqueueIn(producer, "jh");

            CompletableFuture<Integer> pass = riffle.maintenance().promoteNow().toFuture();
            assertThat(pass.get(5, TimeUnit.SECONDS)).as("only the free lane's job").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", other)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE queue = 'jh'")).isEqualTo(3);
            assertStillOpen(producer);

            producer.commit();
            assertThat(OutcomeKit.promote(riffle)).isEqualTo(2);
            assertThat(OutcomeKit.promote(riffle)).isEqualTo(1);
            assertThat(OutcomeKit.promote(riffle)).isZero();
            held.add(inTx);
            assertThat(deliverAll(riffle, "jh", 4).keySet()).containsExactlyInAnyOrderElementsOf(held);
            assertThat(deliverAll(riffle, "jo", 1).keySet()).containsExactly(other);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aDueJobOfTheHeldLaneStaysInTheBacklogAndIsPromotedOnceAfterTheProducerCommits() throws Exception {
        String q = "jc";
        Riffle riffle = startWithPromotion();
        try (Connection producer = database.openJdbc()) {
            // A committed job creates the lane first, so the producer below holds an existing lane's lock.
            long warm = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue(q).build());
            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, q);
            long due = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue(q).runAt(Instant.now().plusMillis(300)).build());
            String deferred = "SELECT state::text AS state, run_at, attempt, run_lease, queue, priority FROM deferred_jobs WHERE job_id = ?";
            Map<String, Object> before = row(db, deferred, due);

            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_at <= now()", due);
            // Many promotion ticks pass while the producer holds the lane: the due row is left exactly as it was.
            OutcomeKit.pause(Duration.ofMillis(1500));
            assertStillOpen(producer);
            assertThat(row(db, deferred, due)).isEqualTo(before);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", due)).isZero();

            producer.commit();
            Instant committed = Instant.now();
            awaitCount(db, 0, "SELECT count(*) FROM deferred_jobs WHERE job_id = ?", due);
            assertThat(Duration.between(committed, Instant.now())).as("promoted right after the commit").isLessThan(Duration.ofSeconds(3));
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", due)).isEqualTo(1);

            Map<Long, Job> got = deliverAll(riffle, q, 3);
            assertThat(got.keySet()).containsExactlyInAnyOrder(warm, held, due);
            for (long id : List.of(warm, held, due)) {
                assertThat(claimsOf(db, id)).as("claims of job %d", id).isEqualTo(1);
            }
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = ? AND state = 'completed'", q)).isEqualTo(3);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aReleaseWhileAProducerHoldsTheLaneReturnsAtOnceAndTheJobRunsOnceAfterTheCommit() throws Exception {
        String q = "jr";
        Riffle riffle = startWithPromotion();
        try (Connection producer = database.openJdbc()) {
            long x = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue(q).build());
            Job claimed = riffle.subscribe(q).take(1).collectList().block(TIMEOUT).get(0);
            assertThat(claimed.id()).isEqualTo(x);

            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, q);
            // The close must not wait for the producer.
            ((ClaimedJob) claimed).release().toFuture().get(5, TimeUnit.SECONDS);
            assertThat(closuresOf(db, x, 1)).as("closed as released").isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_closure_batches WHERE outcome = 'released'")).isEqualTo(1);
            // Not lost: it waits in the backlog, due now, with the attempt given back and the run lease kept.
            Map<String, Object> d = row(db, "SELECT state::text AS state, attempt, run_lease, run_at <= now() AS due "
                    + "FROM deferred_jobs WHERE job_id = ?", x);
            assertThat(d.get("state")).isEqualTo("scheduled");
            assertThat(asLong(d.get("attempt"))).isZero();
            assertThat(asLong(d.get("run_lease"))).isEqualTo(1);
            assertThat(d.get("due")).isEqualTo(true);
            OutcomeKit.pause(Duration.ofMillis(500));
            assertStillOpen(producer);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", x)).isEqualTo(1);

            producer.commit();
            Map<Long, Job> got = deliverAll(riffle, q, 2);
            assertThat(got.keySet()).containsExactlyInAnyOrder(x, held);
            assertThat(got.get(x).attempt()).as("release gave the attempt back").isEqualTo(1);
            assertThat(got.get(x).runLease()).isEqualTo(2);
            assertThat(claimsOf(db, x)).isEqualTo(2);
            assertThat(claimsOf(db, held)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE queue = ?", q)).isZero();
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aDlqRetryWhileAProducerHoldsTheLaneReturnsAtOnceAndTheJobRunsOnceAfterTheCommit() throws Exception {
        String q = "jd";
        Riffle riffle = startWithPromotion();
        try (Connection producer = database.openJdbc()) {
            long x;
            Disposable refuse = riffle.work(Map.of("doomed", job -> Mono.just(JobOutcome.fail("no"))), 1, q).subscribe();
            try {
                x = OutcomeKit.enqueue(riffle, NewJob.builder("doomed").queue(q).build());
                awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", x);
            } finally {
                refuse.dispose();
            }

            producer.setAutoCommit(false);
            long held = OutcomeKit.enqueueIn(producer, q);
            // The admin call gets a definite answer without waiting for the producer: the entry left the DLQ.
            assertThat(riffle.admin().retryDlq(x).toFuture().get(5, TimeUnit.SECONDS)).isTrue();
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", x)).isZero();
            Map<String, Object> d = row(db, "SELECT attempt, run_lease, run_at <= now() AS due FROM deferred_jobs WHERE job_id = ?", x);
            assertThat(asLong(d.get("attempt"))).isZero();
            assertThat(asLong(d.get("run_lease"))).isEqualTo(1);
            assertThat(d.get("due")).isEqualTo(true);
            assertStillOpen(producer);

            producer.commit();
            Map<Long, Job> got = deliverAll(riffle, q, 2);
            assertThat(got.keySet()).containsExactlyInAnyOrder(x, held);
            assertThat(got.get(x).attempt()).isEqualTo(1);
            assertThat(got.get(x).runLease()).isEqualTo(2);
            assertThat(claimsOf(db, x)).isEqualTo(2);
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
