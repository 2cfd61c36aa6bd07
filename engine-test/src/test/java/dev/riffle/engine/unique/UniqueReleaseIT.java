package dev.riffle.engine.unique;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.EnqueueResult;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.ManualRiffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A unique key is held while its job is in the claim's states and released on every way out: completion, failure
 * to the DLQ, cancel (by id and by key), rescue exhaustion; held while scheduled, retryable and running; a period
 * makes one key per time bucket; a state mask narrows what holds the key.
 */
@RiffleTest
class UniqueReleaseIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static NewJob job(String queue, String key) {
        return NewJob.builder("u").queue(queue).unique(UniqueOptions.byKey(key)).build();
    }

    private static EnqueueResult enqueue(ManualRiffle m, NewJob job) {
        return m.riffle().client().enqueueWithResult(job).block(TIMEOUT);
    }

    private static long fresh(ManualRiffle m, NewJob job) {
        EnqueueResult r = enqueue(m, job);
        assertThat(r.duplicate()).as("a new job").isFalse();
        return r.jobId();
    }

    private static void assertHeldBy(ManualRiffle m, NewJob job, long owner) {
        assertThat(enqueue(m, job)).as("duplicate of the owner").isEqualTo(new EnqueueResult(owner, true));
    }

    private static void drain(ManualRiffle m, String queue, JobHandler handler) {
        m.kit().drain(Map.of("u", handler), queue).block(TIMEOUT);
    }

    @Test
    void releasedOnCompletionFailureToDlqAndCancelByIdOrKey(ManualRiffle m, TestDatabase db) {
        NewJob a = job("rel", "a");
        long first = fresh(m, a);
        assertHeldBy(m, a, first);
        assertThat(m.riffle().client().enqueue(a).block(TIMEOUT)).as("plain enqueue: the existing id").isEqualTo(first);

        drain(m, "rel", job -> Mono.empty());                              // completed
        long second = fresh(m, a);
        assertThat(second).isNotEqualTo(first);
        assertHeldBy(m, a, second);

        drain(m, "rel", job -> Mono.just(JobOutcome.fail("no")));          // failed, into the DLQ
        assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", second)).isEqualTo(1);
        long third = fresh(m, a);

        assertThat(m.riffle().admin().cancel(third).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
        long fourth = fresh(m, a);

        assertThat(m.riffle().admin().cancelByUniqueKey("u", "a").block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
        assertThat(db.queryLong("SELECT count(*) FROM job_unique_claims")).as("released in the cancel's transaction").isZero();
        assertThat(m.riffle().admin().cancelByUniqueKey(a).block(TIMEOUT)).isEqualTo(CancelResult.NOT_FOUND);
        long fifth = fresh(m, a);
        assertThat(List.of(first, second, third, fourth, fifth)).doesNotHaveDuplicates();
        // A different key (or kind) is not a duplicate.
        assertThat(enqueue(m, job("rel", "b")).duplicate()).isFalse();
        assertThat(enqueue(m, NewJob.builder("v").queue("rel").unique(UniqueOptions.byKey("a")).build()).duplicate()).isFalse();
    }

    @Test
    void heldWhileScheduledRetryableAndRunningAndReleasedByRescueExhaustion(ManualRiffle m, TestDatabase db) {
        NewJob later = NewJob.builder("u").queue("held").runAt(Instant.now().plus(Duration.ofHours(1)))
                .unique(UniqueOptions.byKey("later")).build();
        long scheduled = fresh(m, later);
        assertHeldBy(m, later, scheduled);

        NewJob retried = job("held", "retried");
        long retryable = fresh(m, retried);
        drain(m, "held", job -> Mono.just(JobOutcome.retry("again", Duration.ofHours(1))));
        assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'retryable'", retryable)).isEqualTo(1);
        assertHeldBy(m, retried, retryable);

        NewJob hung = NewJob.builder("u").queue("hung").maxAttempts(1).unique(UniqueOptions.byKey("hung")).build();
        long running = fresh(m, hung);
        Disposable worker = m.kit().work(Map.of("u", job -> Mono.never()), 1, "hung").subscribe();
        try {
            Await.until("attempt open", TIMEOUT, () -> m.riffle().counts("hung").block(TIMEOUT).inFlight() == 1);
            assertHeldBy(m, hung, running);
            // The attempt is stale and was the last: rescue ends the job (DLQ), which releases the key.
            assertThat(m.rescueStaleNow(Duration.ofMillis(1)).block(TIMEOUT)).extracting(r -> r.jobId()).contains(running);
        } finally {
            worker.dispose();
        }
        long after = fresh(m, hung);
        assertThat(after).isNotEqualTo(running);
    }

    @Test
    void aStateMaskWithoutRunningReleasesTheKeyWhenTheJobIsClaimed(ManualRiffle m) {
        NewJob onlyWaiting = NewJob.builder("u").queue("mask")
                .unique(UniqueOptions.byKey("w").states(UniqueOptions.State.AVAILABLE, UniqueOptions.State.SCHEDULED)).build();
        long first = fresh(m, onlyWaiting);
        assertHeldBy(m, onlyWaiting, first);
        Disposable worker = m.kit().work(Map.of("u", job -> Mono.never()), 1, "mask").subscribe();
        try {
            Await.until("attempt open", TIMEOUT, () -> m.riffle().counts("mask").block(TIMEOUT).inFlight() == 1);
            long second = fresh(m, onlyWaiting);
            assertThat(second).isNotEqualTo(first);
        } finally {
            worker.dispose();
        }
    }

    @Test
    void aPeriodMakesOneKeyPerBucketOfTheDatabaseClock(ManualRiffle m, TestDatabase db) {
        // The bucket is part of the key: the same job in two buckets has two keys, in one bucket one.
        String keyAt = "SELECT encode(unique_key_of('u', 'p', '{}', NULL, 'tick', 60000, ?::timestamptz), 'hex') AS k";
        Object k1 = db.queryRows(keyAt, "2030-01-01T00:00:00Z").get(0).get("k");
        assertThat(db.queryRows(keyAt, "2030-01-01T00:00:59.999Z").get(0).get("k")).isEqualTo(k1);
        assertThat(db.queryRows(keyAt, "2030-01-01T00:01:00Z").get(0).get("k")).isNotEqualTo(k1);

        NewJob tick = NewJob.builder("u").queue("period").unique(UniqueOptions.byKey("tick").period(Duration.ofSeconds(1))).build();
        // Start just after a second boundary so the first two enqueues share a bucket.
        Instant now = m.databaseNow();
        m.awaitDatabaseTime(now.plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS).plusMillis(20), TIMEOUT);
        long first = fresh(m, tick);
        assertHeldBy(m, tick, first);
        m.awaitDatabaseTime(m.databaseNow().plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS), TIMEOUT);
        long second = fresh(m, tick);
        assertThat(second).as("next bucket, while the first job is still available").isNotEqualTo(first);
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'period'")).isEqualTo(2);
    }

    @Test
    void argsFieldsChooseTheKeyAndABatchDedupesWithinItself(ManualRiffle m) {
        UniqueOptions byUser = UniqueOptions.byArgs("user");
        NewJob u1 = NewJob.builder("u").queue("args").args("{\"user\":1,\"at\":\"x\"}").unique(byUser).build();
        NewJob u1Again = NewJob.builder("u").queue("args").args("{\"at\":\"y\",\"user\":1}").unique(byUser).build();
        NewJob u2 = NewJob.builder("u").queue("args").args("{\"user\":2}").unique(byUser).build();
        NewJob plain = NewJob.builder("u").queue("args").args("{\"user\":1}").build();
        List<EnqueueResult> r = m.riffle().client().enqueueManyWithResult(List.of(u1, plain, u1Again, u2)).block(TIMEOUT);
        assertThat(r).extracting(EnqueueResult::duplicate).containsExactly(false, false, true, false);
        assertThat(r.get(2).jobId()).isEqualTo(r.get(0).jobId());
        assertThat(r.get(1).jobId()).isNotEqualTo(r.get(0).jobId());
        // Whole args: field order does not matter, values do.
        NewJob w1 = NewJob.builder("u").queue("args").args("{\"a\":1,\"b\":2}").unique(UniqueOptions.byArgs()).build();
        NewJob w2 = NewJob.builder("u").queue("args").args("{\"b\":2,\"a\":1}").unique(UniqueOptions.byArgs()).build();
        NewJob w3 = NewJob.builder("u").queue("args").args("{\"b\":3,\"a\":1}").unique(UniqueOptions.byArgs()).build();
        List<EnqueueResult> w = m.riffle().client().enqueueManyWithResult(List.of(w1, w2, w3)).block(TIMEOUT);
        assertThat(w).extracting(EnqueueResult::duplicate).containsExactly(false, true, false);
    }

    @Test
    void aRolledBackEnqueueReleasesTheKeyAndPlainEnqueuesNeverTouchTheClaims(ManualRiffle m, TestDatabase db) throws Exception {
        try (Connection c = db.openJdbc()) {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                long before = claimsTableTouches(st);
                st.executeQuery("SELECT enqueue_jobs(ARRAY['plain','plain'], ARRAY['utx','utx'], ARRAY['{}','{}']::jsonb[], "
                        + "ARRAY[2,2]::smallint[], ARRAY[25,25]::smallint[], ARRAY[NULL,NULL]::timestamptz[])").close();
                long plain = claimsTableTouches(st);
                assertThat(plain).as("enqueue_jobs reads and writes nothing of job_unique_claims").isEqualTo(before);
                st.executeQuery("SELECT * FROM enqueue_unique_jobs(ARRAY['plain'], ARRAY['utx'], ARRAY['{}']::jsonb[], "
                        + "ARRAY[2]::smallint[], ARRAY[25]::smallint[], ARRAY[NULL]::timestamptz[], ARRAY[NULL]::jsonb[], "
                        + "ARRAY['tx'], ARRAY[NULL]::bigint[], ARRAY['{available}'])").close();
                assertThat(claimsTableTouches(st)).as("the probe sees a unique enqueue").isGreaterThan(plain);
            }
            c.rollback();
        }
        assertThat(db.queryLong("SELECT count(*) FROM job_unique_claims WHERE kind = 'utx'")).isZero();
        long id = fresh(m, NewJob.builder("utx").queue("plain").unique(UniqueOptions.byKey("tx").states(UniqueOptions.State.AVAILABLE)).build());
        assertThat(db.queryLong("SELECT job_id FROM job_unique_claims WHERE kind = 'utx'")).isEqualTo(id);

        // Sweep: a released claim (completed owner) is deleted; a held one is kept.
        m.kit().drain(Map.of("utx", job -> Mono.empty()), "plain").block(TIMEOUT);
        long held = fresh(m, NewJob.builder("utx").queue("plain-held").unique(UniqueOptions.byKey("held")).build());
        assertThat(db.queryLong("SELECT count(*) FROM job_unique_claims WHERE kind = 'utx'")).isEqualTo(2);
        assertThat(db.queryLong("SELECT released FROM sweep_unique_claims(NULL, 1000)")).isPositive();
        assertThat(db.queryLong("SELECT job_id FROM job_unique_claims WHERE kind = 'utx'")).isEqualTo(held);
    }

    // Scans, index scans and inserts on job_unique_claims in the current transaction.
    private static long claimsTableTouches(Statement st) throws java.sql.SQLException {
        try (ResultSet rs = st.executeQuery("SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) + n_tup_ins + n_tup_upd "
                + "+ n_tup_del FROM pg_stat_xact_user_tables WHERE relid = 'job_unique_claims'::regclass")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
