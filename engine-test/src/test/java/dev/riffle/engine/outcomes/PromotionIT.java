package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Scheduled jobs wait in deferred_jobs until due, then move to the ready ring exactly once, oldest first. */
@RiffleTest
class PromotionIT extends ProbeIT {
    @Test
    void aFutureJobWaitsInTheBacklogAndIsPromotedOnceDueKeepingItsBody() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("later").queue("promo-one").args("{\"x\":42}").priority(3)
                    .maxAttempts(7).runAt(Instant.now().plus(Duration.ofHours(1))).build());
            Map<String, Object> d = row(db, "SELECT state::text AS state, attempt, run_lease FROM deferred_jobs WHERE job_id = ?", id);
            assertThat(d.get("state")).isEqualTo("scheduled");
            assertThat(asLong(d.get("attempt"))).isZero();
            assertThat(asLong(d.get("run_lease"))).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", id)).isZero();
            assertThat(riffle.counts("promo-one").block(TIMEOUT).scheduled()).isEqualTo(1);
            assertThat(promote(riffle)).as("not due yet").isZero();

            db.execute("UPDATE deferred_jobs SET run_at = now() - interval '1 second' WHERE job_id = ?", id);
            assertThat(promote(riffle)).isEqualTo(1);
            assertThat(promote(riffle)).as("a second pass finds nothing").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();
            Map<String, Object> r = row(db, "SELECT kind, queue, args->>'x' AS x, priority, max_attempts, attempt, run_lease "
                    + "FROM ready_entries WHERE job_id = ?", id);
            assertThat(r.get("kind")).isEqualTo("later");
            assertThat(r.get("x")).isEqualTo("42");
            assertThat(asLong(r.get("priority"))).isEqualTo(3);
            assertThat(asLong(r.get("max_attempts"))).isEqualTo(7);
            assertThat(asLong(r.get("attempt"))).isZero();
            assertThat(asLong(r.get("run_lease"))).isZero();

            Job job = riffle.subscribe("promo-one").blockFirst(TIMEOUT);
            assertThat(job.id()).isEqualTo(id);
            assertThat(job.attempt()).isEqualTo(1);
            assertThat(job.runLease()).isEqualTo(1);
            assertThat(job.argsJson()).contains("42");
            job.complete().block(TIMEOUT);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void promotionTakesTheOldestDueJobsFirstInBoundedBatches() {
        // One enqueue shard: lane order is then promotion order, which is what this test reads.
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("promo-order").withEnqueueShards(1))
                .maintenance(OutcomeKit.manualMaintenance().promotionBatch(2).promotionMaxBatches(1).build()));
        try {
            Instant later = Instant.now().plus(Duration.ofHours(1));
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                ids.add(OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("promo-order").runAt(later).build()));
            }
            // Due times in the reverse of enqueue order, so job id order and run_at order disagree.
            for (int i = 0; i < 5; i++) {
                db.execute("UPDATE deferred_jobs SET run_at = now() - make_interval(mins => ?) WHERE job_id = ?", 10 + i, ids.get(i));
            }
            assertThat(promote(riffle)).as("one batch of two").isEqualTo(2);
            assertThat(db.queryRows("SELECT job_id FROM ready_entries WHERE queue = 'promo-order' ORDER BY lane_seq"))
                    .extracting(r -> asLong(r.get("job_id"))).containsExactly(ids.get(4), ids.get(3));
            assertThat(promote(riffle)).isEqualTo(2);
            assertThat(promote(riffle)).isEqualTo(1);
            assertThat(promote(riffle)).isZero();
            assertThat(db.queryRows("SELECT job_id FROM ready_entries WHERE queue = 'promo-order' ORDER BY lane_seq"))
                    .extracting(r -> asLong(r.get("job_id")))
                    .containsExactly(ids.get(4), ids.get(3), ids.get(2), ids.get(1), ids.get(0));
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aPromoterThatDiesMidBatchLosesAndDuplicatesNothing() throws Exception {
        String q = "promo-crash";
        int n = 50;
        Riffle victim = OutcomeKit.start(db);
        Riffle survivor = OutcomeKit.start(db);
        try (Connection holder = database.openJdbc()) {
            // One immediate job creates the lane, so the lane's reservation lock exists to be held below.
            long first = OutcomeKit.enqueue(survivor, NewJob.builder("k").queue(q).build());
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                jobs.add(NewJob.builder("k").queue(q).runAt(Instant.now().plus(Duration.ofHours(1))).build());
            }
            List<Long> ids = new ArrayList<>(survivor.client().enqueueMany(jobs).block(TIMEOUT));
            db.execute("UPDATE deferred_jobs SET run_at = now() - interval '1 second' WHERE queue = ?", q);

            // Block writes to the current ready-ring child: the victim's promotion locks the lane and deletes the
            // due rows, then waits here, in its re-append, with its transaction open, and is killed there. (A held
            // lane lock would not do: promotion skips a lane it cannot lock instead of waiting for it.)
            holder.setAutoCommit(false);
            String child = "ready_entries_" + db.queryLong("SELECT slot FROM queue_ring_rotations ORDER BY generation DESC LIMIT 1");
            try (PreparedStatement ps = holder.prepareStatement("LOCK TABLE " + child + " IN SHARE MODE")) {
                ps.execute();
            }
            CompletableFuture<Integer> dying = victim.maintenance().promoteNow().toFuture();
            String needle = db.schema() + "\".promote_due";
            String waiting = "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position(? in query) > 0";
            await("the victim's promotion blocked mid-batch", () -> db.queryRows(waiting, needle).size() == 1);
            long pid = asLong(db.queryRows(waiting, needle).get(0).get("pid"));
            assertThat(db.queryLong("SELECT count(*) FROM pg_terminate_backend(?::int) t WHERE t", pid)).isEqualTo(1);
            assertThatThrownBy(() -> dying.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)).as("the dead promoter's pass")
                    .isInstanceOf(ExecutionException.class);
            holder.commit();

            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE queue = ?", q)).as("rolled back, not lost").isEqualTo(n);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = ?", q)).isEqualTo(1);
            assertThat(promote(survivor)).isEqualTo(n);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = ?", q)).isEqualTo(n + 1);
            assertThat(db.queryLong("SELECT count(DISTINCT job_id) FROM ready_entries WHERE queue = ?", q)).isEqualTo(n + 1);

            ids.add(first);
            List<Long> delivered = survivor.subscribe(q).flatMap((Job j) -> j.complete().thenReturn(j.id()))
                    .take(n + 1).collectList().block(TIMEOUT);
            assertThat(delivered).containsExactlyInAnyOrderElementsOf(ids);
        } finally {
            OutcomeKit.close(victim, survivor);
        }
    }

    @Test
    void competingEnginesPromoteEveryScheduledJobExactlyOnce() {
        int n = 2000;
        String q = "promo-race";
        MaintenanceConfig eager = MaintenanceConfig.builder().promotionInterval(Duration.ofMillis(50))
                .leaderRetry(Duration.ofMillis(200)).promotionBatch(64).build();
        Riffle a = OutcomeKit.start(db, b -> b.maintenance(eager).poolSize(8));
        Riffle c = OutcomeKit.start(db, b -> b.maintenance(eager).poolSize(8));
        try {
            await("a maintenance leader", () -> a.maintenance().isLeader() || c.maintenance().isLeader());
            assertThat(a.maintenance().isLeader() && c.maintenance().isLeader()).as("two leaders at once").isFalse();

            // Stored far in the future so that nothing is due while 2,000 rows are still being written; the test
            // then decides, on the database clock, when each one becomes due.
            Instant parked = Instant.now().plus(Duration.ofHours(1));
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                jobs.add(NewJob.builder("k").queue(q).args("{\"i\":" + i + "}").runAt(parked).build());
            }
            List<Long> ids = a.client().enqueueMany(jobs).block(TIMEOUT);
            awaitCount(db, n, "SELECT count(*) FROM deferred_jobs WHERE queue = ?", q);

            // Half become due in waves over one second and are left to the leader's loop alone.
            db.execute("UPDATE deferred_jobs SET run_at = now() + (job_id % 10) * interval '100 milliseconds' "
                    + "WHERE queue = ? AND job_id % 2 = 0", q);
            awaitCount(db, n / 2, "SELECT count(*) FROM deferred_jobs WHERE queue = ?", q);

            // The other half become due in waves while both engines also promote by hand, concurrently.
            db.execute("UPDATE deferred_jobs SET run_at = now() + (job_id % 10) * interval '100 milliseconds' "
                    + "WHERE queue = ?", q);
            List<Integer> manual = Flux.range(0, 60)
                    .flatMap(i -> Mono.delay(Duration.ofMillis(20L * (i / 2)))
                            .then((i % 2 == 0 ? a : c).maintenance().promoteNow()), 8)
                    .collectList()
                    .block(TIMEOUT);
            awaitCount(db, 0, "SELECT count(*) FROM deferred_jobs WHERE queue = ?", q);
            assertThat(manual.stream().mapToInt(Integer::intValue).sum()).as("promoted by hand").isBetween(0, n / 2);

            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = ?", q)).isEqualTo(n);
            assertThat(db.queryLong("SELECT count(DISTINCT job_id) FROM ready_entries WHERE queue = ?", q)).isEqualTo(n);

            List<Long> delivered = Flux.merge(
                            a.subscribe(q).flatMap((Job j) -> j.complete().thenReturn(j.id()), 64, 1),
                            c.subscribe(q).flatMap((Job j) -> j.complete().thenReturn(j.id()), 64, 1))
                    .take(n)
                    .collectList()
                    .block(Duration.ofSeconds(60));
            assertThat(delivered).hasSize(n);
            assertThat(new HashSet<>(delivered)).as("each job delivered once").hasSize(n).isEqualTo(new HashSet<>(ids));
            // Every claim of the queue is accounted for by those deliveries, so no job was handed out a second time.
            assertThat(db.queryLong("SELECT sum(claimed_count) FROM lease_claim_batches WHERE queue = ?", q)).isEqualTo(n);
            assertThat(a.counts(q).block(TIMEOUT).available()).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = ? AND state = 'completed'", q)).isEqualTo(n);
        } finally {
            OutcomeKit.close(a, c);
        }
    }
}
