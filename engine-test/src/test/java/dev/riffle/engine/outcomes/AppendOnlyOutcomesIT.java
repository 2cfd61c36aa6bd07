package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The ring tables stay insert-only through every non-success exit: retries, snoozes, failures with and without the
 * DLQ, DLQ retry and purge, handler and operator cancels, and promotion. Only the tables the design marks mutable
 * ({@code deferred_jobs}, {@code dlq_entries}, {@code attempt_state}, {@code leases}) may see UPDATE or DELETE.
 */
@RiffleTest
class AppendOnlyOutcomesIT extends ProbeIT {
    private static final List<String> APPEND_ONLY = List.of("ready_entries", "ready_segments", "ready_tombstones",
            "ready_claim_attempt_batches", "done_entries", "receipt_completion_batches", "queue_terminal_count_deltas",
            "lease_claim_batches", "lease_claim_closure_batches");

    private static List<NewJob> jobs(String kind, String queue, int maxAttempts, int n) {
        List<NewJob> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(NewJob.builder(kind).queue(queue).maxAttempts(maxAttempts).args("{\"i\":" + i + "}").build());
        }
        return out;
    }

    @Test
    void noRingPartitionIsUpdatedOrDeletedByAnyOutcome() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("ao-plain").withDlq(false)));
        Queue<Job> hanging = new ConcurrentLinkedQueue<>();
        JobHandler onceThenOk = job -> job.attempt() == 1 ? Mono.error(new IllegalStateException("first try")) : Mono.empty();
        JobHandler snoozeOnce = job -> job.runLease() == 1 ? Mono.just(JobOutcome.snooze(Duration.ofMinutes(1))) : Mono.empty();
        JobHandler doomed = job -> Mono.error(new IllegalStateException("never works"));
        Map<String, JobHandler> handlers = Map.of(
                "ok", job -> Mono.empty(),
                "flaky", onceThenOk,
                "sleepy", snoozeOnce,
                "doomed", doomed,
                "refused", job -> Mono.just(JobOutcome.fail("refused")),
                "quitter", job -> Mono.just(JobOutcome.cancel("gave up")),
                "hang", job -> {
                    hanging.add(job);
                    return job.cancellation().then(Mono.just(JobOutcome.complete()));
                });
        Disposable worker = riffle.work(handlers, 32, "ao", "ao-plain").subscribe();
        try {
            List<NewJob> all = new ArrayList<>();
            all.addAll(jobs("ok", "ao", 25, 20));
            all.addAll(jobs("flaky", "ao", 25, 10));
            all.addAll(jobs("sleepy", "ao", 25, 10));
            all.addAll(jobs("doomed", "ao", 2, 5));
            all.addAll(jobs("doomed", "ao-plain", 2, 5));
            all.addAll(jobs("refused", "ao", 25, 4));
            all.addAll(jobs("quitter", "ao-plain", 25, 4));
            all.addAll(jobs("hang", "ao", 25, 1));
            riffle.client().enqueueMany(all).block(TIMEOUT);
            // Never worked: these only get cancelled, from the ready ring and from the backlog.
            List<Long> idle = riffle.client().enqueueMany(jobs("ok", "ao-idle", 25, 3)).block(TIMEOUT);
            List<NewJob> future = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                future.add(NewJob.builder("ok").queue("ao").runAt(Instant.now().plus(Duration.ofHours(1))).build());
            }
            List<Long> scheduled = riffle.client().enqueueMany(future).block(TIMEOUT);

            for (long id : idle) {
                assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
            }
            for (long id : scheduled) {
                assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
            }
            await("the hanging job running", () -> hanging.size() == 1);
            assertThat(riffle.admin().cancel(hanging.peek().id()).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_RUNNING);

            // Drive every backoff and snooze to its end by making the backlog due, one promotion pass at a time.
            long completed = 20 + 10 + 10;
            long failed = 5;
            long cancelled = 4 + 1 + 3 + 2;
            long deadLettered = 5 + 4;
            long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            while (db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue LIKE 'ao%'")
                    + db.queryLong("SELECT count(*) FROM dlq_entries WHERE queue LIKE 'ao%'")
                    < completed + failed + cancelled + deadLettered) {
                assertThat(System.nanoTime()).as("run finished in time").isLessThan(deadline);
                db.execute("UPDATE deferred_jobs SET run_at = now() WHERE queue LIKE 'ao%' AND run_at > now()");
                promote(riffle);
                OutcomeKit.pause(Duration.ofMillis(100));
            }
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE queue = 'ao'")).isEqualTo(deadLettered);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'ao-plain' AND state = 'failed'")).isEqualTo(failed);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue LIKE 'ao%' AND state = 'cancelled'"))
                    .isEqualTo(cancelled);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue LIKE 'ao%' AND state = 'completed'"))
                    .isEqualTo(completed);

            // The DLQ paths write the ring too: a retried entry is re-appended, runs, and is refused once more.
            long revived = db.queryLong("SELECT min(job_id) FROM dlq_entries WHERE queue = 'ao' AND kind = 'refused'");
            long purged = db.queryLong("SELECT max(job_id) FROM dlq_entries WHERE queue = 'ao' AND kind = 'refused'");
            assertThat(riffle.admin().purgeDlq(purged).block(TIMEOUT)).isTrue();
            assertThat(riffle.admin().retryDlq(revived).block(TIMEOUT)).isTrue();
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ? AND run_lease = 2", revived);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }

        // The cumulative statistics lag behind the writes (each backend reports its counters in batches, and the
        // engine's backends report the rest as they exit). Zero updates only mean something once the inserts show.
        long readyRows = db.queryLong("SELECT count(*) FROM ready_entries");
        String insertsSql = "SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = ? "
                + "AND relname ~ '^ready_entries_[0-9]+$'";
        OutcomeKit.await("ready_entries inserts visible in pg_stat_user_tables", Duration.ofSeconds(30),
                () -> db.queryLong(insertsSql, db.schema()) >= readyRows);
        assertThat(db.queryLong(insertsSql, db.schema())).isEqualTo(readyRows);

        for (String table : APPEND_ONLY) {
            List<Map<String, Object>> rows = db.queryRows("SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables "
                    + "WHERE schemaname = ? AND relname ~ ?", db.schema(), "^" + table + "_[0-9]+$");
            assertThat(rows).as("partitions of " + table).isNotEmpty();
            assertThat(rows.stream().mapToLong(r -> asLong(r.get("n_tup_ins"))).sum()).as("inserts into " + table).isPositive();
            for (Map<String, Object> row : rows) {
                assertThat(asLong(row.get("n_tup_upd"))).as(row.get("relname") + " updates").isZero();
                assertThat(asLong(row.get("n_tup_del"))).as(row.get("relname") + " deletes").isZero();
            }
        }
        // The exempt backlog tables did change, so the run really took the mutable paths this test is about.
        assertThat(db.queryLong("SELECT n_tup_del FROM pg_stat_user_tables WHERE schemaname = ? AND relname = 'deferred_jobs'",
                db.schema())).isPositive();
        assertThat(db.queryLong("SELECT n_tup_del FROM pg_stat_user_tables WHERE schemaname = ? AND relname = 'dlq_entries'",
                db.schema())).isPositive();
    }
}
