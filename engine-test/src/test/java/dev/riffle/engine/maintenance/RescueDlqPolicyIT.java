package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A queue's own DLQ policy also governs what rescue does with an exhausted attempt, even when the rescuing engine
 * (the leader) does not configure that queue and its default says otherwise.
 */
@RiffleTest
class RescueDlqPolicyIT {

    @Test
    void rescueHonoursThePolicyTheQueuesOwnEngineRecorded(TestDatabase db) {
        // The worker configures "nodlq" without DLQ and "dlq" with it; the rescuer knows neither queue, and its default
        // is the opposite of each.
        Riffle worker = Fixtures.manual(db, b -> b.dlqByDefault(true)
                .queue(QueueConfig.of("nodlq").withDlq(false)).queue(QueueConfig.of("dlq").withDlq(true))
                .maintenance(MaintenanceConfig.builder().enabled(false).heartbeatInterval(Duration.ofHours(1))
                        .staleAfter(Duration.ofHours(3)).build()));
        Riffle rescuerWithDlq = Fixtures.manual(db, b -> b.dlqByDefault(true));
        Riffle rescuerWithoutDlq = Fixtures.manual(db, b -> b.dlqByDefault(false));
        try {
            long noDlqJob = worker.client().enqueue(NewJob.builder("k").queue("nodlq").maxAttempts(1).build()).block(Fixtures.TIMEOUT);
            long dlqJob = worker.client().enqueue(NewJob.builder("k").queue("dlq").maxAttempts(1).build()).block(Fixtures.TIMEOUT);
            Job a = Fixtures.claim(worker, "nodlq", 1).get(0);
            Job b = Fixtures.claim(worker, "dlq", 1).get(0);
            assertThat(List.of(a.id(), b.id())).containsExactly(noDlqJob, dlqJob);

            List<RescuedAttempt> first = rescuerWithDlq.maintenance().rescueStaleNow(Duration.ZERO).block(Fixtures.TIMEOUT);
            List<RescuedAttempt> second = rescuerWithoutDlq.maintenance().rescueStaleNow(Duration.ZERO).block(Fixtures.TIMEOUT);
            assertThat(first).hasSize(2);
            assertThat(second).isEmpty();
            assertThat(first).filteredOn(r -> r.jobId() == noDlqJob).singleElement()
                    .satisfies(r -> assertThat(r.disposition()).isEqualTo("failed"));
            assertThat(first).filteredOn(r -> r.jobId() == dlqJob).singleElement()
                    .satisfies(r -> assertThat(r.disposition()).isEqualTo("dlq"));
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", noDlqJob)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'failed'", noDlqJob)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", dlqJob)).isEqualTo(1);
        } finally {
            Fixtures.close(worker, rescuerWithDlq, rescuerWithoutDlq);
        }
    }

    @Test
    void aQueueWithoutAnExplicitPolicyFollowsTheRescuersDefault(TestDatabase db) {
        Riffle worker = Fixtures.manual(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false)
                .heartbeatInterval(Duration.ofHours(1)).staleAfter(Duration.ofHours(3)).build()));
        Riffle rescuer = Fixtures.manual(db, b -> b.dlqByDefault(false));
        try {
            long id = worker.client().enqueue(NewJob.builder("k").queue("plain").maxAttempts(1).build()).block(Fixtures.TIMEOUT);
            Fixtures.claim(worker, "plain", 1);
            List<RescuedAttempt> rescued = rescuer.maintenance().rescueStaleNow(Duration.ZERO).block(Fixtures.TIMEOUT);
            assertThat(rescued).singleElement().satisfies(r -> {
                assertThat(r.jobId()).isEqualTo(id);
                assertThat(r.disposition()).isEqualTo("failed");
            });
        } finally {
            Fixtures.close(worker, rescuer);
        }
    }
}
