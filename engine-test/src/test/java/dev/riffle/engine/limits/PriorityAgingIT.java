package dev.riffle.engine.limits;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * Priority aging (issue #14 item 6, docs/limits.md#priority-aging): a job that has waited longer than the queue's
 * step is claimed as if one priority higher per step, up to 1, without any stored row changing. A job's wait starts
 * at its run_at, so a job enqueued with a past runAt has waited since then: no test waits for time to pass.
 */
@RiffleTest
class PriorityAgingIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private static long enqueue(Riffle r, String queue, int priority, Instant runAt) {
        return r.client().enqueue(NewJob.builder("k").queue(queue).priority(priority).runAt(runAt).build())
                .block(TIMEOUT);
    }

    private static Job claimOne(Riffle r, String queue) {
        Job job = r.subscribe(queue).next().block(TIMEOUT);
        job.complete().block(TIMEOUT);
        return job;
    }

    @Test
    void anOldLowPriorityJobIsClaimedBeforeNewerHigherPriorityJobs(TestDatabase db) {
        Riffle r = Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(4)
                .queue(QueueConfig.of("aged").withPriorityAging(Duration.ofMinutes(1))).build()).block(TIMEOUT);
        try {
            Instant now = Instant.now();
            for (String q : new String[] {"aged", "plain"}) {
                // Waiting 2.5 steps: priority 4 is claimed as 2, ahead of the fresh priority-3 jobs.
                long old = enqueue(r, q, 4, now.minus(Duration.ofSeconds(150)));
                for (int i = 0; i < 3; i++) {
                    enqueue(r, q, 3, null);
                }
                Job first = claimOne(r, q);
                if (q.equals("aged")) {
                    assertThat(first.id()).as("the aged priority-4 job first").isEqualTo(old);
                    assertThat(first.priority()).as("claimed with its stored priority").isEqualTo(4);
                } else {
                    assertThat(first.id()).as("without aging, priority 3 first").isNotEqualTo(old);
                    assertThat(first.priority()).isEqualTo(3);
                }
            }
            // Aged for an hour: claimed as priority 1 (the cap), before the two priority-3 jobs left.
            long ancient = enqueue(r, "aged", 4, now.minus(Duration.ofHours(1)));
            Job next = claimOne(r, "aged");
            assertThat(next.id()).isEqualTo(ancient);
            // 2 priority-3 jobs of "aged" are left; a job waiting under one step keeps its priority 4.
            enqueue(r, "aged", 4, now.minus(Duration.ofSeconds(30)));
            assertThat(claimOne(r, "aged").priority()).isEqualTo(3);
            assertThat(db.queryLong("SELECT priority_aging_ms FROM queue_meta WHERE queue = 'aged'")).isEqualTo(60_000);
        } finally {
            r.close().block(TIMEOUT);
        }
    }
}
