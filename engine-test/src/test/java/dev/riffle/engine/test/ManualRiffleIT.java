package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.api.Ring;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** Manual mode: maintenance runs only when the test says so; the test clock moves only the engine's local time. */
@RiffleTest
class ManualRiffleIT {

    private static final Map<String, dev.riffle.engine.api.JobHandler> NOOP = Map.of("tick", job -> Mono.empty());

    @Test
    void aScheduledJobBecomesClaimableOnlyOnceDueByTheDatabaseClockAndPromoted(ManualRiffle manual) {
        RiffleTestKit kit = manual.kit();
        Instant runAt = manual.databaseNow().plusSeconds(2);
        long id = kit.enqueue(NewJob.builder("tick").queue("sched").runAt(runAt).build()).block();

        // Not due by the database clock: moving the engine's clock an hour on changes nothing, promotion finds nothing.
        manual.advanceClock(Duration.ofHours(1));
        StepVerifier.create(manual.promoteNow()).expectNext(0).verifyComplete();
        StepVerifier.create(kit.drain(NOOP, "sched")).expectNext(List.of()).verifyComplete();
        assertThat(counts(manual, "sched")).extracting(QueueCounts::scheduled, QueueCounts::available)
                .containsExactly(1L, 0L);

        // Due by the database clock, but nothing promotes it on its own: the leader loops are off.
        manual.awaitDatabaseTime(runAt, Duration.ofSeconds(10));
        Await.pause(Duration.ofMillis(300));
        assertThat(counts(manual, "sched")).extracting(QueueCounts::scheduled, QueueCounts::available)
                .containsExactly(1L, 0L);

        StepVerifier.create(manual.promoteNow()).expectNext(1).verifyComplete();
        StepVerifier.create(kit.drain(NOOP, "sched"))
                .assertNext(results -> assertThat(results).extracting(JobResult::jobId).containsExactly(id))
                .verifyComplete();
        StepVerifier.create(kit.awaitState(id, RiffleTestKit.JobState.COMPLETED))
                .expectNext(RiffleTestKit.JobState.COMPLETED).verifyComplete();
    }

    @Test
    void maintenancePassesRunOnRequest(ManualRiffle manual) {
        assertThat(manual.riffle().maintenance().isLeader()).isFalse();
        manual.kit().enqueue(NewJob.builder("tick").queue("rot").build()).block();
        manual.kit().drain(NOOP, "rot").block();

        // Ring order: the queue ring first, which holds the completed job, so it is not idle and rotates.
        StepVerifier.create(manual.rotateNow()).assertNext(outcomes -> assertThat(outcomes)
                        .hasSize(Ring.values().length).first().isEqualTo(dev.riffle.engine.api.RotateOutcome.ROTATED))
                .verifyComplete();
        StepVerifier.create(manual.pruneNow()).assertNext(outcomes -> assertThat(outcomes).hasSize(Ring.values().length))
                .verifyComplete();
        StepVerifier.create(manual.rescueNow()).expectNext(List.of()).verifyComplete();
        StepVerifier.create(manual.cleanupDlqNow()).expectNext(0L).verifyComplete();
        // The rotation a pass made is visible in the ring status (queue ring generation moved past 0).
        StepVerifier.create(manual.riffle().maintenance().status().filter(s -> s.ring() == Ring.QUEUE).next())
                .assertNext(s -> assertThat(s.generation()).isPositive()).verifyComplete();
    }

    @Test
    void staleAttemptsAreRescuedWhenTheTestSaysSo(ManualRiffle manual) {
        // One attempt only, so the rescue ends the job rather than scheduling a retry another test could promote.
        long id = manual.kit().enqueue(NewJob.builder("hang").queue("stale").maxAttempts(1).build()).block();
        var subscription = manual.kit().work(Map.of("hang", job -> Mono.never()), 1, "stale").subscribe();
        try {
            Await.until("attempt open", Duration.ofSeconds(30), () -> counts(manual, "stale").inFlight() == 1);
            StepVerifier.create(manual.rescueNow()).expectNext(List.of()).verifyComplete();

            StepVerifier.create(manual.rescueStaleNow(Duration.ofMillis(1)))
                    .assertNext(rescued -> assertThat(rescued).extracting(r -> r.jobId()).containsExactly(id))
                    .verifyComplete();
        } finally {
            subscription.dispose();
        }
    }

    @Test
    void theTestClockOnlyMovesForward() {
        TestClock clock = TestClock.at(Instant.parse("2030-01-01T00:00:00Z"));
        assertThat(clock.advance(Duration.ofMinutes(5))).isEqualTo(Instant.parse("2030-01-01T00:05:00Z"));
        assertThat(clock.withZone(java.time.ZoneId.of("Europe/Paris")).instant()).isEqualTo(clock.instant());
        assertThatThrownBy(() -> clock.advance(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> clock.set(Instant.parse("2029-12-31T00:00:00Z")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("only moves forward");
        clock.set(Instant.parse("2031-01-01T00:00:00Z"));
        assertThat(clock.millis()).isEqualTo(Instant.parse("2031-01-01T00:00:00Z").toEpochMilli());
    }

    @Test
    void manualModeStartedByHandIsClosedByTheTest(TestDatabase db) {
        ManualRiffle manual = RiffleTestKit.manual(db, b -> b.maxClaimBatch(3));
        try (manual) {
            assertThat(manual.riffle().config().maxClaimBatch()).isEqualTo(3);
            assertThat(manual.riffle().config().maintenance().enabled()).isFalse();
        }
        assertThat(manual.riffle().isDisposed()).isTrue();
    }

    private static QueueCounts counts(ManualRiffle manual, String queue) {
        return manual.riffle().counts(queue).block(Duration.ofSeconds(10));
    }
}
