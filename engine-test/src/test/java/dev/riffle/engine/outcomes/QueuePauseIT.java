package dev.riffle.engine.outcomes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestConfig;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Pausing a queue through the admin API: during a drain the running attempts finish, nothing new is claimed (read
 * from the database), enqueues are still accepted, and a resume wakes the subscribers at once (NOTIFY), well before
 * their safety poll would.
 */
@RiffleTest
class QueuePauseIT implements RiffleTestConfig {

    private static final Duration TIMEOUT = Duration.ofSeconds(15);
    /** Far longer than the test: only a NOTIFY can make an idle subscription claim again in time. */
    private static final Duration SAFETY_POLL = Duration.ofSeconds(60);

    @Override
    public void configure(RiffleConfig.Builder builder) {
        // No claims ahead of running handlers, so "in flight" is exactly the handlers the gate holds.
        builder.workPrefetch(false).safetyPollInterval(SAFETY_POLL).pollInterval(SAFETY_POLL);
    }

    @Test
    void pauseDuringADrainLetsRunningJobsFinishClaimsNothingAndResumeDrainsTheRestPromptly(Riffle riffle,
                                                                                          TestDatabase db) {
        String queue = "pause-drain";
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            jobs.add(NewJob.builder("gated").queue(queue).build());
        }
        riffle.client().enqueueMany(jobs).block(TIMEOUT);

        Sinks.Empty<Void> gate = Sinks.empty();
        Set<Long> started = ConcurrentHashMap.newKeySet();
        JobHandler handler = job -> {
            started.add(job.id());
            return gate.asMono().thenReturn(JobOutcome.complete());
        };
        Disposable work = riffle.work(Map.of("gated", handler), 2, queue).subscribe();
        try {
            Await.until("two handlers running", TIMEOUT, () -> started.size() == 2);
            assertThat(riffle.admin().pauseQueue(queue).block(TIMEOUT)).isTrue();
            assertThat(counts(riffle, queue).paused()).isTrue();
            assertThat(db.queryLong("SELECT count(*) FROM queue_meta WHERE queue = ? AND paused", queue)).isEqualTo(1);

            // The running attempts finish and their outcomes land; their handlers' slots free up and ask for more.
            gate.tryEmitEmpty();
            Await.until("running attempts completed", TIMEOUT, () -> counts(riffle, queue).completed() == 2);

            // Enqueue still works while paused.
            long late = riffle.client().enqueue(NewJob.builder("gated").queue(queue).build()).block(TIMEOUT);
            assertThat(late).isPositive();

            // Nothing new was claimed: no open attempt, every other job still available, read from the database.
            Await.pause(Duration.ofMillis(500));
            QueueCounts paused = counts(riffle, queue);
            assertThat(paused.inFlight()).as("open attempts while paused").isZero();
            assertThat(paused.available()).as("jobs left unclaimed").isEqualTo(19);
            assertThat(paused.completed()).isEqualTo(2);
            assertThat(started).hasSize(2);
            assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.job_ids) j "
                    + "WHERE b.queue = ?", queue)).as("claims ever made").isEqualTo(2);

            // Resume: the NOTIFY wakes the idle subscription; the rest drains long before its 60 s safety poll.
            long resumedAt = System.nanoTime();
            assertThat(riffle.admin().resumeQueue(queue).block(TIMEOUT)).isTrue();
            Await.until("the rest drained after resume", TIMEOUT, () -> counts(riffle, queue).completed() == 21);
            assertThat(Duration.ofNanos(System.nanoTime() - resumedAt)).isLessThan(Duration.ofSeconds(10));
            QueueCounts after = counts(riffle, queue);
            assertThat(after.paused()).isFalse();
            assertThat(after.available()).isZero();
            assertThat(started).hasSize(21);
        } finally {
            work.dispose();
        }
    }

    @Test
    void pauseAndResumeSayWhetherTheyChangedAnythingAndCheckTheName(Riffle riffle) {
        assertThat(riffle.admin().resumeQueue("pause-idem").block(TIMEOUT)).as("not paused").isFalse();
        assertThat(riffle.admin().pauseQueue("pause-idem").block(TIMEOUT)).isTrue();
        assertThat(riffle.admin().pauseQueue("pause-idem").block(TIMEOUT)).as("paused already").isFalse();
        assertThat(riffle.admin().resumeQueue("pause-idem").block(TIMEOUT)).isTrue();
        assertThat(counts(riffle, "pause-idem").paused()).isFalse();
        assertThatThrownBy(() -> riffle.admin().pauseQueue("bad queue!").block(TIMEOUT))
                .isInstanceOf(InvalidJobException.class);
        assertThatThrownBy(() -> riffle.admin().resumeQueue("").block(TIMEOUT))
                .isInstanceOf(InvalidJobException.class);
    }

    private static QueueCounts counts(Riffle riffle, String queue) {
        return Mono.defer(() -> riffle.counts(queue)).block(TIMEOUT);
    }
}
