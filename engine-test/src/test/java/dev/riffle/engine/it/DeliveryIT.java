package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Fault-free delivery: every job exactly once, completed, visible in terminal_jobs, and the ring stayed append-only. */
@RiffleTest
class DeliveryIT {

    private static final List<String> APPEND_ONLY = List.of("ready_entries", "done_entries", "receipt_completion_batches",
            "ready_claim_attempt_batches", "lease_claim_batches", "lease_claim_closure_batches");

    @Test
    void everyJobIsDeliveredExactlyOnceAcrossConcurrentSubscribers(TestDatabase db) {
        int n = 5_000;
        // Maintenance off: this test counts claim and closure rows, which prune would reclaim under it.
        Riffle a = Engines.start(db, c -> c.maintenance(dev.riffle.engine.MaintenanceConfig.builder().enabled(false).build()));
        Riffle b = Engines.start(db, c -> c.maintenance(dev.riffle.engine.MaintenanceConfig.builder().enabled(false).build()));
        try {
            List<Long> ids = Engines.enqueue(a, "delivery", n);
            assertThat(new HashSet<>(ids)).hasSize(n);

            // Four subscribers over two engines, each with a stated handler concurrency.
            List<Flux<Long>> subscribers = new ArrayList<>();
            for (Riffle r : List.of(a, b, a, b)) {
                subscribers.add(r.subscribe("delivery")
                        .flatMap((Job job) -> job.complete().thenReturn(job.id()), 16, 1));
            }
            List<Long> delivered = Flux.merge(subscribers)
                    .take(n)
                    .collectList()
                    .block(Duration.ofSeconds(120));

            assertThat(delivered).hasSize(n);
            Set<Long> distinct = new HashSet<>(delivered);
            assertThat(distinct).as("no job delivered twice").hasSize(n).isEqualTo(new HashSet<>(ids));
            // Nothing more arrives once the queue is drained: a late duplicate would show up here.
            List<Job> extra = a.subscribe("delivery").take(Duration.ofMillis(700)).collectList().block(Engines.TIMEOUT);
            assertThat(extra).isEmpty();

            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'delivery' AND state = 'completed'"))
                    .isEqualTo(n);
            assertThat(db.queryLong("SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE queue = 'delivery'"))
                    .isEqualTo(n);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs t WHERE queue = 'delivery' AND args->>'i' IS NOT NULL"))
                    .as("terminal rows are hydrated from their ready rows").isEqualTo(n);
            var counts = a.counts("delivery").block(Engines.TIMEOUT);
            assertThat(counts.available()).isZero();
            assertThat(counts.inFlight()).isZero();
            assertThat(counts.completed()).isEqualTo(n);
            // One claim batch row per claim statement, never one per job.
            long claimRows = db.queryLong("SELECT count(*) FROM lease_claim_batches");
            assertThat(claimRows).isEqualTo(a.stats().claimBatches() + b.stats().claimBatches()).isLessThan(n);
            assertThat(db.queryLong("SELECT sum(claimed_count) FROM lease_claim_batches")).isEqualTo(n);
            assertThat(db.queryLong("SELECT sum(closed_count) FROM lease_claim_closure_batches")).isEqualTo(n);
        } finally {
            Engines.close(a, b);
        }

        // Statistics reach pg_stat_user_tables when backends flush them (at exit at the latest). Wait until the
        // inserts are visible, so a zero for updates and deletes is a real observation, not a stale snapshot.
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (db.queryLong("SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = ? "
                + "AND relname LIKE 'ready_entries\\_%'", db.schema()) < n && System.nanoTime() < deadline) {
            Mono.delay(Duration.ofMillis(200)).block();
        }
        assertThat(db.queryLong("SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = ? "
                + "AND relname LIKE 'ready_entries\\_%'", db.schema())).isEqualTo(n);
        for (String table : APPEND_ONLY) {
            List<Map<String, Object>> rows = db.queryRows("SELECT relname, n_tup_upd, n_tup_del FROM pg_stat_user_tables "
                    + "WHERE schemaname = ? AND relname ~ ?", db.schema(), "^" + table + "_[0-9]+$");
            assertThat(rows).as("partitions of " + table).isNotEmpty();
            for (Map<String, Object> row : rows) {
                assertThat(((Number) row.get("n_tup_upd")).longValue()).as(row.get("relname") + " updates").isZero();
                assertThat(((Number) row.get("n_tup_del")).longValue()).as(row.get("relname") + " deletes").isZero();
            }
        }
    }
}
