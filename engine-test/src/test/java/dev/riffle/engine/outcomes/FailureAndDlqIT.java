package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static dev.riffle.engine.outcomes.OutcomeKit.makeDue;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.test.RiffleTest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Terminal failure: exhausted or explicitly failed jobs end as a {@code failed} terminal row, or in the DLQ when the
 * queue's policy says so; DLQ retry, purge, listing and retention.
 */
@RiffleTest
class FailureAndDlqIT extends ProbeIT {
    private record Seen(long id, int attempt, long runLease) {}

    /** Fails every attempt until {@code healed} is set, then completes. */
    private static JobHandler failingUntil(AtomicBoolean healed, Queue<Seen> seen) {
        return job -> {
            seen.add(new Seen(job.id(), job.attempt(), job.runLease()));
            return healed.get() ? Mono.empty() : Mono.error(new IllegalStateException("still broken"));
        };
    }

    private static List<Long> enqueue(Riffle riffle, String kind, String queue, int maxAttempts, int n) {
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            jobs.add(NewJob.builder(kind).queue(queue).maxAttempts(maxAttempts).args("{\"i\":" + i + "}").build());
        }
        return riffle.client().enqueueMany(jobs).block(TIMEOUT);
    }

    /** Fails with an explicit terminal outcome, so each job reaches the DLQ on its first attempt. */
    private static Disposable failImmediately(Riffle riffle, String queue, String... kinds) {
        Map<String, JobHandler> handlers = new HashMap<>();
        for (String k : kinds) {
            handlers.put(k, job -> Mono.just(JobOutcome.fail("rejected " + job.id())));
        }
        return riffle.work(handlers, 8, queue).subscribe();
    }

    @Test
    void exhaustedAttemptsEndFailedInTerminalJobsWhenTheQueueHasNoDlq() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("no-dlq").withDlq(false)));
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        Disposable worker = riffle.work(Map.of("doomed", failingUntil(new AtomicBoolean(), seen)), 2, "no-dlq").subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("doomed").queue("no-dlq").maxAttempts(2).args("{\"i\":0}").build());
            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id);
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id);

            Map<String, Object> t = row(db, "SELECT state::text AS state, attempt, run_lease, args->>'i' AS i, "
                    + "jsonb_array_length(payload->'errors') AS errors FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(t.get("state")).isEqualTo("failed");
            assertThat(asLong(t.get("attempt"))).isEqualTo(2);
            assertThat(asLong(t.get("run_lease"))).isEqualTo(2);
            assertThat(t.get("i")).as("hydrated from the ready row").isEqualTo("0");
            assertThat(asLong(t.get("errors"))).as("both failures recorded").isEqualTo(2);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();

            // Terminal means terminal: nothing is due, nothing is claimable, no third attempt appears.
            assertThat(promote(riffle)).isZero();
            QueueCounts counts = riffle.counts("no-dlq").block(TIMEOUT);
            assertThat(counts.available()).isZero();
            assertThat(counts.inFlight()).isZero();
            assertThat(counts.scheduled()).isZero();
            assertThat(claimsOf(db, id)).isEqualTo(2);
            assertThat(List.copyOf(seen)).containsExactly(new Seen(id, 1, 1), new Seen(id, 2, 2));
            assertThat(closuresOf(db, id, 1)).isEqualTo(1);
            assertThat(closuresOf(db, id, 2)).isEqualTo(1);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void exhaustedAttemptsGoToTheDlqByDefaultAndDlqRetryDeliversAgainWithAHigherRunLease() {
        Riffle riffle = OutcomeKit.start(db);
        AtomicBoolean healed = new AtomicBoolean();
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        Disposable worker = riffle.work(Map.of("doomed", failingUntil(healed, seen)), 2, "with-dlq").subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("doomed").queue("with-dlq").maxAttempts(2).build());
            awaitCount(db, 1, "SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id);
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", id);

            Map<String, Object> d = row(db, "SELECT attempt, run_lease, original_run_lease, dlq_reason, kind, queue, "
                    + "jsonb_array_length(payload->'errors') AS errors FROM dlq_entries WHERE job_id = ?", id);
            assertThat(asLong(d.get("attempt"))).isEqualTo(2);
            assertThat(asLong(d.get("run_lease"))).isEqualTo(2);
            assertThat(asLong(d.get("original_run_lease"))).isEqualTo(2);
            assertThat((String) d.get("dlq_reason")).startsWith("attempts exhausted").contains("still broken");
            assertThat(asLong(d.get("errors"))).isEqualTo(2);
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", id))
                    .as("a DLQ'd job has no failed terminal row as well").isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();

            List<DlqEntry> listed = riffle.admin().listDlq("with-dlq", 0, 10).collectList().block(TIMEOUT);
            assertThat(listed).hasSize(1);
            DlqEntry e = listed.get(0);
            assertThat(e.jobId()).isEqualTo(id);
            assertThat(e.kind()).isEqualTo("doomed");
            assertThat(e.queue()).isEqualTo("with-dlq");
            assertThat(e.attempt()).isEqualTo(2);
            assertThat(e.runLease()).isEqualTo(2);
            assertThat(e.reason()).isEqualTo(d.get("dlq_reason"));
            assertThat(e.payloadJson()).contains("still broken");

            healed.set(true);
            assertThat(riffle.admin().retryDlq(id).block(TIMEOUT)).isTrue();
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).isZero();
            awaitCount(db, 1, "SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'completed'", id);
            await("third delivery recorded", () -> seen.size() == 3);
            assertThat(List.copyOf(seen)).as("the retried job starts over at attempt 1 with a fresh, higher run lease")
                    .containsExactly(new Seen(id, 1, 1), new Seen(id, 2, 2), new Seen(id, 1, 3));
            Map<String, Object> t = row(db, "SELECT attempt, run_lease FROM terminal_jobs WHERE job_id = ?", id);
            assertThat(asLong(t.get("attempt"))).isEqualTo(1);
            assertThat(asLong(t.get("run_lease"))).isEqualTo(3);
            for (long lease = 1; lease <= 3; lease++) {
                assertThat(closuresOf(db, id, lease)).as("closures of attempt %d", lease).isEqualTo(1);
            }
            assertThat(riffle.admin().retryDlq(id).block(TIMEOUT)).as("no longer in the DLQ").isFalse();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void anExplicitFailIsTerminalAtOnceAndPurgeRemovesItForGood() {
        Riffle riffle = OutcomeKit.start(db);
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        JobHandler refuse = job -> {
            seen.add(new Seen(job.id(), job.attempt(), job.runLease()));
            return Mono.just(JobOutcome.fail("bad input"));
        };
        Disposable worker = riffle.work(Map.of("refused", refuse), 2, "purge").subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("refused").queue("purge").maxAttempts(25).build());
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", id);
            Map<String, Object> d = row(db, "SELECT attempt, dlq_reason FROM dlq_entries WHERE job_id = ?", id);
            assertThat(asLong(d.get("attempt"))).as("24 attempts left, none used").isEqualTo(1);
            assertThat((String) d.get("dlq_reason")).contains("bad input");
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();

            assertThat(riffle.admin().purgeDlq(id).block(TIMEOUT)).isTrue();
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).isZero();
            assertThat(riffle.admin().purgeDlq(id).block(TIMEOUT)).isFalse();
            assertThat(riffle.admin().retryDlq(id).block(TIMEOUT)).as("a purged job cannot be retried").isFalse();
            assertThat(promote(riffle)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", id)).isEqualTo(1);
            assertThat(claimsOf(db, id)).isEqualTo(1);
            assertThat(List.copyOf(seen)).hasSize(1);
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void bulkRetryAndPurgeTouchOnlyWhatTheFilterNames() {
        Riffle riffle = OutcomeKit.start(db);
        AtomicBoolean healed = new AtomicBoolean();
        Queue<Seen> seen = new ConcurrentLinkedQueue<>();
        JobHandler h = failingUntil(healed, seen);
        Disposable worker = riffle.work(Map.of("bulk.x", h, "bulk.y", h), 8, "bulk-a", "bulk-b").subscribe();
        try {
            List<Long> a = enqueue(riffle, "bulk.x", "bulk-a", 1, 4);
            List<Long> bx = enqueue(riffle, "bulk.x", "bulk-b", 1, 2);
            List<Long> by = enqueue(riffle, "bulk.y", "bulk-b", 1, 3);
            awaitCount(db, 9, "SELECT count(*) FROM dlq_entries WHERE queue IN ('bulk-a', 'bulk-b')");

            assertThat(riffle.admin().retryDlq(DlqFilter.of("bulk-a", "bulk.y")).block(TIMEOUT))
                    .as("queue and kind both have to match").isEmpty();
            healed.set(true);
            assertThat(riffle.admin().retryDlq(DlqFilter.queue("bulk-a")).block(TIMEOUT)).containsExactlyInAnyOrderElementsOf(a);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE queue = 'bulk-a'")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE queue = 'bulk-b'")).isEqualTo(5);
            awaitCount(db, a.size(), "SELECT count(*) FROM terminal_jobs WHERE queue = 'bulk-a' AND state = 'completed'");

            assertThat(riffle.admin().purgeDlq(DlqFilter.kind("bulk.y")).block(TIMEOUT)).containsExactlyInAnyOrderElementsOf(by);
            assertThat(db.queryRows("SELECT job_id FROM dlq_entries WHERE queue IN ('bulk-a', 'bulk-b') ORDER BY job_id"))
                    .extracting(r -> asLong(r.get("job_id"))).containsExactlyElementsOf(bx);
            assertThat(riffle.admin().purgeDlq(DlqFilter.of("bulk-b", "bulk.x")).block(TIMEOUT)).containsExactlyInAnyOrderElementsOf(bx);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE queue IN ('bulk-a', 'bulk-b')")).isZero();
            // Only the four retried jobs ran again; the purged ones never came back.
            assertThat(seen).hasSize(9 + a.size());
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'bulk-b'")).isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aBulkFilterMustNameAQueueOrAKind() {
        assertThatThrownBy(() -> new DlqFilter(null, null, false))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("filter"));
        assertThatThrownBy(() -> DlqFilter.queue(null))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("filter"));
        assertThatThrownBy(() -> DlqFilter.kind(null))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("filter"));
        assertThat(DlqFilter.all().everything()).isTrue();
    }

    @Test
    void listDlqPagesByJobIdWithinOneQueue() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = failImmediately(riffle, "pages", "paged");
        Disposable other = failImmediately(riffle, "pages-other", "paged");
        try {
            List<Long> ids = enqueue(riffle, "paged", "pages", 3, 7);
            enqueue(riffle, "paged", "pages-other", 3, 2);
            awaitCount(db, 9, "SELECT count(*) FROM dlq_entries WHERE queue IN ('pages', 'pages-other')");

            List<List<Long>> pages = new ArrayList<>();
            long after = 0;
            for (int guard = 0; guard < 10; guard++) {
                List<Long> page = riffle.admin().listDlq("pages", after, 3).map(DlqEntry::jobId).collectList().block(TIMEOUT);
                pages.add(page);
                if (page.isEmpty()) {
                    break;
                }
                after = page.get(page.size() - 1);
            }
            assertThat(pages).extracting(List::size).containsExactly(3, 3, 1, 0);
            assertThat(pages.stream().flatMap(List::stream).toList()).as("every entry once, in job id order")
                    .containsExactlyElementsOf(ids.stream().sorted().toList());

            assertThatThrownBy(() -> riffle.admin().listDlq("pages", 0, 0).collectList().block(TIMEOUT))
                    .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("limit"));
            assertThatThrownBy(() -> riffle.admin().listDlq("pages", 0, 1001).collectList().block(TIMEOUT))
                    .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("limit"));
        } finally {
            worker.dispose();
            other.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void retentionCleanupDeletesOnlyEntriesOlderThanTheRetentionInBoundedBatches() {
        Riffle riffle = OutcomeKit.start(db, b -> b.maintenance(OutcomeKit.manualMaintenance()
                .dlqRetention(Duration.ofHours(1)).dlqCleanupBatch(2).build()));
        Disposable worker = failImmediately(riffle, "retention", "expiring");
        try {
            List<Long> ids = enqueue(riffle, "expiring", "retention", 3, 5);
            awaitCount(db, 5, "SELECT count(*) FROM dlq_entries WHERE queue = 'retention'");
            for (int i = 0; i < 3; i++) {
                db.execute("UPDATE dlq_entries SET dlq_at = now() - interval '2 hours' WHERE job_id = ?", ids.get(i));
            }
            // Just inside the retention: must survive.
            db.execute("UPDATE dlq_entries SET dlq_at = now() - interval '59 minutes' WHERE job_id = ?", ids.get(3));

            assertThat(riffle.maintenance().cleanupDlqNow().block(TIMEOUT)).as("one bounded batch").isEqualTo(2);
            assertThat(riffle.maintenance().cleanupDlqNow().block(TIMEOUT)).isEqualTo(1);
            assertThat(riffle.maintenance().cleanupDlqNow().block(TIMEOUT)).isZero();
            assertThat(db.queryRows("SELECT job_id FROM dlq_entries WHERE queue = 'retention' ORDER BY job_id"))
                    .extracting(r -> asLong(r.get("job_id"))).containsExactly(ids.get(3), ids.get(4));
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }
}
