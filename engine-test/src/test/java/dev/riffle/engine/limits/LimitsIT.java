package dev.riffle.engine.limits;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.QueueWeights;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Queue limits (issue #14 item 4, docs/limits.md): a concurrency limit and a rate limit held across two engines on
 * one schema, counted from the database (open claims, claim batch timestamps), and weighted sharing of one
 * subscription across queues.
 */
@RiffleTest
class LimitsIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    /** Attempts of {@code queue} claimed and not closed, from the claim ring. */
    private static final String OPEN_CLAIMS = """
            SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.receipt_ids) AS i(receipt_id)
             WHERE b.queue = ? AND NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches c
                                                WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.receipt_id)""";
    private static final String CLAIMED = "SELECT coalesce(sum(claimed_count), 0) FROM lease_claim_batches WHERE queue = ?";

    private static Riffle start(TestDatabase db, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(4);
        tweak.accept(b);
        return Riffle.start(b.build()).block(TIMEOUT);
    }

    private static void enqueue(Riffle riffle, String queue, int n) {
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            jobs.add(NewJob.builder("k").queue(queue).build());
        }
        riffle.client().enqueueMany(jobs).block(TIMEOUT);
    }

    private static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                r.close().block(TIMEOUT);
            }
        }
    }

    @Test
    void aConcurrencyLimitHoldsAcrossTwoEngines(TestDatabase db) {
        String q = "lim.conc";
        // Only the first engine configures the limit: it is recorded at its start, and the second obeys the record.
        Riffle a = start(db, b -> b.queue(QueueConfig.of(q).withConcurrencyLimit(3)));
        Riffle b = start(db, c -> {});
        List<Disposable> work = new ArrayList<>();
        try {
            assertThat(db.queryLong("SELECT concurrency_limit FROM queue_meta WHERE queue = ?", q)).isEqualTo(3);
            Map<String, JobHandler> slow = Map.of("k", job -> Mono.delay(Duration.ofMillis(150)).then(Mono.empty()));
            work.add(a.work(slow, 10, q).subscribe());
            work.add(b.work(slow, 10, q).subscribe());
            enqueue(a, q, 30);
            long max = 0;
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = ?", q) < 30) {
                assertThat(System.nanoTime()).as("30 jobs drained in time").isLessThan(deadline);
                max = Math.max(max, db.queryLong(OPEN_CLAIMS, q));
                Await.pause(Duration.ofMillis(10));
            }
            assertThat(max).as("most running attempts seen at once, across both engines").isBetween(1L, 3L);
            // Both engines took part: each holds a lease, and each claimed some of the jobs.
            assertThat(db.queryLong("SELECT count(DISTINCT engine_id) FROM queue_limit_leases WHERE queue = ?", q))
                    .isEqualTo(2);
        } finally {
            work.forEach(Disposable::dispose);
            close(a, b);
        }
        assertThat(db.queryLong("SELECT count(*) FROM queue_limit_leases")).as("leases released at close").isZero();
    }

    @Test
    void aRateLimitHoldsAcrossTwoEngines(TestDatabase db) {
        String q = "lim.rate";
        int rate = 10;
        int burst = 5;
        Riffle a = start(db, b -> b.queue(QueueConfig.of(q).withRateLimit(rate, Duration.ofSeconds(1), burst)));
        Riffle b = start(db, c -> {});
        List<Disposable> work = new ArrayList<>();
        try {
            enqueue(a, q, 25);
            Map<String, JobHandler> quick = Map.of("k", job -> Mono.empty());
            work.add(a.work(quick, 10, q).subscribe());
            work.add(b.work(quick, 10, q).subscribe());
            Await.until("25 jobs claimed", TIMEOUT, () -> db.queryLong(CLAIMED, q) == 25);
            // Every interval between two claims holds at most burst + rate x its length, from the claims' own
            // (database) timestamps. Slack: 2.5 tokens (250 ms at this rate) for the time between an engine
            // taking tokens and the database stamping its claim, which a loaded machine stretches.
            List<Map<String, Object>> batches = db.queryRows("SELECT extract(epoch FROM claimed_at)::float8 AS t, "
                    + "claimed_count AS n FROM lease_claim_batches WHERE queue = ? ORDER BY claimed_at", q);
            double worst = 0;
            for (int i = 0; i < batches.size(); i++) {
                long n = 0;
                for (int j = i; j < batches.size(); j++) {
                    n += ((Number) batches.get(j).get("n")).longValue();
                    double span = ((Number) batches.get(j).get("t")).doubleValue()
                            - ((Number) batches.get(i).get("t")).doubleValue();
                    worst = Math.max(worst, n - rate * span);
                }
            }
            assertThat(worst).as("claims beyond rate x time in any interval").isLessThanOrEqualTo(burst + 2.5);
            double first = ((Number) batches.get(0).get("t")).doubleValue();
            double last = ((Number) batches.get(batches.size() - 1).get("t")).doubleValue();
            assertThat(last - first).as("25 jobs at 10/s after a burst of 5 take about 2 s").isGreaterThan(1.5);
        } finally {
            work.forEach(Disposable::dispose);
            close(a, b);
        }
    }

    @Test
    void weightsShareOneSubscriptionAcrossQueues(TestDatabase db) {
        Riffle r = start(db, c -> {});
        try {
            enqueue(r, "w.a", 20);
            enqueue(r, "w.b", 20);
            // One job at a time, so every claim is of one job and the weights show in the job counts; take(20, true)
            // asks for 20 jobs in all, so none is claimed beyond them (a job left in concatMap's queue at cancel
            // would stay claimed until rescue).
            List<String> queues = r.subscribe(QueueWeights.of("w.a", 3, "w.b", 1))
                    .take(20, true)
                    .concatMap(job -> job.complete().thenReturn(job.queue()), 1)
                    .collectList()
                    .block(TIMEOUT);
            long a = queues.stream().filter("w.a"::equals).count();
            assertThat(a).as("jobs of the weight-3 queue among 20 (15 by the weights)").isBetween(13L, 17L);
            // A queue that runs dry leaves the subscription to the others.
            List<String> rest = r.subscribe(QueueWeights.of("w.a", 3, "w.b", 1))
                    .take(20, true)
                    .concatMap(job -> job.complete().thenReturn(job.queue()), 1)
                    .collectList()
                    .block(TIMEOUT);
            assertThat(rest).hasSize(20);
        } finally {
            close(r);
        }
    }
}
