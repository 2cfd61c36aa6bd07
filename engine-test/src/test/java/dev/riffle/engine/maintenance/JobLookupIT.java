package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobError;
import dev.riffle.engine.api.JobInfo;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code admin().job(id)} (issue #13 item 5): one lookup finds a job in every place it can live, and the schema's
 * {@code job_lookup} names the state; failures carry message, exception class and a bounded stack trace. Maintenance
 * is off (each pass is run by hand) and the history floor is zero, so a prune happens when the test asks for it.
 */
@RiffleTest(queueSlots = 4, claimSlots = 4)
class JobLookupIT {

    private Riffle riffle;

    @BeforeEach
    void start(TestDatabase db) {
        riffle = Fixtures.manual(db, b -> b.dlqByDefault(false)
                .queue(QueueConfig.of("lookup.dlq").withDlq(true))
                .queue(QueueConfig.of("lookup.m").withMaterializedLeases())
                .maintenance(MaintenanceConfig.builder().enabled(false).historyRetention(Duration.ZERO).build()));
    }

    @AfterEach
    void stop() {
        Fixtures.close(riffle);
    }

    private JobInfo lookup(long id) {
        JobInfo info = riffle.admin().job(id).block(Fixtures.TIMEOUT);
        assertThat(info).as("job %d found", id).isNotNull();
        return info;
    }

    private long enqueue(NewJob job) {
        return riffle.client().enqueue(job).block(Fixtures.TIMEOUT);
    }

    private Job claimOne(String queue) {
        return Fixtures.claim(riffle, queue, 1).get(0);
    }

    @Test
    void anUnknownIdIsEmpty() {
        assertThat(riffle.admin().job(987_654_321L).blockOptional(Fixtures.TIMEOUT)).isEmpty();
    }

    @Test
    void aJobIsAvailableThenRunningWithItsProgressThenCompleted() {
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.a").args("{\"order\": 7}").priority(3)
                .maxAttempts(4).build());
        JobInfo ready = lookup(id);
        assertThat(ready.state()).isEqualTo(JobState.AVAILABLE);
        assertThat(ready.kind()).isEqualTo("lookup.kind");
        assertThat(ready.queue()).isEqualTo("lookup.a");
        assertThat(ready.argsJson()).isEqualTo("{\"order\": 7}");
        assertThat(ready.priority()).isEqualTo(3);
        assertThat(ready.maxAttempts()).isEqualTo(4);
        assertThat(ready.attempt()).isZero();
        assertThat(ready.attemptedAt()).isNull();
        assertThat(ready.errors()).isEmpty();

        Job job = claimOne("lookup.a");
        job.progress(40, "forty");
        job.flushProgress().block(Fixtures.TIMEOUT);
        JobInfo running = lookup(id);
        assertThat(running.state()).isEqualTo(JobState.RUNNING);
        assertThat(running.attempt()).isEqualTo(1);
        assertThat(running.runLease()).isEqualTo(1);
        assertThat(running.attemptedAt()).isNotNull();
        assertThat(running.progressJson()).contains("40").contains("forty");

        job.complete().block(Fixtures.TIMEOUT);
        JobInfo done = lookup(id);
        assertThat(done.state()).isEqualTo(JobState.COMPLETED);
        assertThat(done.state().isFinal()).isTrue();
        assertThat(done.attempt()).isEqualTo(1);
        assertThat(done.finalizedAt()).isNotNull();
        assertThat(done.argsJson()).isEqualTo("{\"order\": 7}");
    }

    @Test
    void aMaterializedAttemptIsRunningThroughItsLeaseAndRowLocalReceipt() {
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.m").build());
        Job job = claimOne("lookup.m");
        JobInfo running = lookup(id);
        assertThat(running.state()).isEqualTo(JobState.RUNNING);
        assertThat(running.runLease()).isEqualTo(1);
        job.fail("stop").block(Fixtures.TIMEOUT);
        assertThat(lookup(id).state()).isEqualTo(JobState.FAILED);
    }

    @Test
    void aFutureJobIsScheduledAndCancelledFromTheBacklog() {
        Instant at = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.s").runAt(at).build());
        JobInfo scheduled = lookup(id);
        assertThat(scheduled.state()).isEqualTo(JobState.SCHEDULED);
        assertThat(scheduled.runAt()).isEqualTo(at);

        assertThat(riffle.admin().cancel(id).block(Fixtures.TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
        assertThat(lookup(id).state()).as("a wide terminal row").isEqualTo(JobState.CANCELLED);
    }

    @Test
    void aReadyJobCancelledByAnOperatorIsCancelled() {
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.c").build());
        assertThat(riffle.admin().cancel(id).block(Fixtures.TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
        JobInfo cancelled = lookup(id);
        assertThat(cancelled.state()).isEqualTo(JobState.CANCELLED);
        assertThat(cancelled.finalizedAt()).isNotNull();
    }

    @Test
    void failuresKeepMessageClassAndABoundedStackTrace(TestDatabase db) {
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.f").maxAttempts(2).build());
        claimOne("lookup.f").finish(JobOutcome.retryOn(new IllegalStateException("boom on attempt 1")))
                .block(Fixtures.TIMEOUT);
        JobInfo retryable = lookup(id);
        assertThat(retryable.state()).isEqualTo(JobState.RETRYABLE);
        assertThat(retryable.attempt()).isEqualTo(1);
        assertThat(retryable.errors()).hasSize(1);
        JobError first = retryable.errors().get(0);
        assertThat(first.message()).isEqualTo("boom on attempt 1");
        assertThat(first.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
        assertThat(first.stackTrace()).startsWith("java.lang.IllegalStateException: boom on attempt 1")
                .contains("JobLookupIT.failuresKeepMessageClassAndABoundedStackTrace");
        assertThat(first.attempt()).isEqualTo(1);
        assertThat(first.at()).isNotNull();

        db.execute("UPDATE deferred_jobs SET run_at = now() WHERE job_id = ?", id);
        assertThat(riffle.maintenance().promoteNow().block(Fixtures.TIMEOUT)).isEqualTo(1);
        claimOne("lookup.f").finish(JobOutcome.fail("gave up", deep(2_000))).block(Fixtures.TIMEOUT);
        JobInfo failed = lookup(id);
        assertThat(failed.state()).isEqualTo(JobState.FAILED);
        assertThat(failed.attempt()).isEqualTo(2);
        assertThat(failed.errors()).extracting(JobError::attempt).containsExactly(1, 2);
        JobError last = failed.lastError().orElseThrow();
        assertThat(last.message()).isEqualTo("gave up");
        assertThat(last.exceptionClass()).isEqualTo(ArithmeticException.class.getName());
        assertThat(last.stackTrace()).startsWith("java.lang.ArithmeticException: deep")
                .hasSizeLessThanOrEqualTo(JobError.MAX_STACK_TRACE);
        assertThat(last.stackTrace().length()).as("cut, not empty").isGreaterThan(JobError.MAX_STACK_TRACE / 2);

        // A plain message (no exception) has no class and no trace.
        long plain = enqueue(NewJob.builder("lookup.kind").queue("lookup.f").maxAttempts(1).build());
        claimOne("lookup.f").fail("no exception").block(Fixtures.TIMEOUT);
        JobError only = lookup(plain).lastError().orElseThrow();
        assertThat(only.message()).isEqualTo("no exception");
        assertThat(only.exceptionClass()).isNull();
        assertThat(only.stackTrace()).isNull();
    }

    /** An exception whose printed stack trace is far longer than the kept bound. */
    private static ArithmeticException deep(int depth) {
        return depth == 0 ? new ArithmeticException("deep") : deep(depth - 1);
    }

    @Test
    void aDeadLetteredJobIsInTheDlqWithItsReason() {
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.dlq").build());
        claimOne("lookup.dlq").finish(JobOutcome.fail("poison", new IllegalArgumentException("bad input")))
                .block(Fixtures.TIMEOUT);
        JobInfo dlq = lookup(id);
        assertThat(dlq.state()).isEqualTo(JobState.DLQ);
        assertThat(dlq.dlqReason()).contains("poison");
        assertThat(dlq.finalizedAt()).isNotNull();
        assertThat(dlq.lastError().orElseThrow().exceptionClass()).isEqualTo(IllegalArgumentException.class.getName());
    }

    @Test
    void aJobPurgedFromTheDlqIsGoneNotRunning() {
        // What a purge leaves behind is the job's claimed ready row and its closed receipt; the lookup used to read
        // that as a running attempt (found by the dashboard's tests).
        long id = enqueue(NewJob.builder("lookup.kind").queue("lookup.dlq").build());
        claimOne("lookup.dlq").fail("poison").block(Fixtures.TIMEOUT);
        assertThat(lookup(id).state()).isEqualTo(JobState.DLQ);
        assertThat(riffle.admin().purgeDlq(id).block(Fixtures.TIMEOUT)).isTrue();
        assertThat(riffle.admin().job(id).blockOptional(Fixtures.TIMEOUT)).isEmpty();
    }

    @Test
    void terminalHistoryGoesWithItsPrunedSlotWhileBacklogAndDlqRowsStay(TestDatabase db) {
        int slot = currentQueueSlot(db);
        long completed = enqueue(NewJob.builder("lookup.kind").queue("lookup.p").build());
        long retryable = enqueue(NewJob.builder("lookup.kind").queue("lookup.p").build());
        long dead = enqueue(NewJob.builder("lookup.kind").queue("lookup.dlq").build());
        List<Job> jobs = Fixtures.claim(riffle, "lookup.p", 2);
        for (Job j : jobs) {
            (j.id() == completed ? j.complete() : j.retry("later", Duration.ofHours(1))).block(Fixtures.TIMEOUT);
        }
        claimOne("lookup.dlq").fail("poison").block(Fixtures.TIMEOUT);
        assertThat(lookup(completed).state()).isEqualTo(JobState.COMPLETED);

        for (int i = 0; i < 4 && (currentQueueSlot(db) + 1) % 4 != slot; i++) {
            assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
        }
        assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE ready_slot = ?", slot)).isZero();

        assertThat(riffle.admin().job(completed).blockOptional(Fixtures.TIMEOUT))
                .as("completed history pruned with its slot").isEmpty();
        JobInfo later = lookup(retryable);
        assertThat(later.state()).as("the backlog row outlives the slot").isEqualTo(JobState.RETRYABLE);
        assertThat(later.kind()).isEqualTo("lookup.kind");
        assertThat(later.errors()).extracting(JobError::message).containsExactly("later");
        assertThat(lookup(dead).state()).isEqualTo(JobState.DLQ);
    }

    private static int currentQueueSlot(TestDatabase db) {
        return (int) db.queryLong("SELECT slot FROM queue_ring_rotations ORDER BY generation DESC LIMIT 1");
    }
}
