package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** Completion racing rescue on the same attempt: exactly one wins, exactly one closure, the loser sees a typed error. */
@RiffleTest
class RescueRaceIT {

    @Test
    void rescueSkipsAnAttemptWhoseCompletionHoldsTheLockAndItsCursorStopsThere(TestDatabase db) throws Exception {
        Riffle riffle = Fixtures.manual(db);
        try {
            Fixtures.enqueue(riffle, "held", 2);
            List<Job> jobs = Fixtures.claim(riffle, "held", 2);
            Job first = jobs.get(0);
            Fixtures.pause(Duration.ofMillis(20));
            List<RescuedAttempt> rescued;
            try (Connection completion = Fixtures.holdAttemptLock(db, first.id(), first.runLease())) {
                rescued = riffle.maintenance().rescueStaleNow(Duration.ofMillis(1)).block(Fixtures.TIMEOUT);
                // The held attempt is skipped (try-lock failed), the other one is rescued.
                assertThat(rescued).extracting(RescuedAttempt::jobId).containsExactly(jobs.get(1).id());
                // The cursor may not pass the stale claim it could not close.
                assertThat(db.queryLong("SELECT rescue_cursor_job_id FROM claim_ring_slots WHERE slot = 0")).isLessThan(first.id());
                completion.rollback();
            }
            // The "completion" finishes now and wins; rescue then has nothing left to do.
            first.complete().block(Fixtures.TIMEOUT);
            assertThat(riffle.maintenance().rescueStaleNow(Duration.ofMillis(1)).block(Fixtures.TIMEOUT)).isEmpty();
            assertThat(Fixtures.openClaims(db)).isZero();
            assertThat(Fixtures.doubleClosures(db)).isZero();
        } finally {
            Fixtures.close(riffle);
        }
    }

    @Test
    void completionsRacingRescueCloseEveryAttemptExactlyOnce(TestDatabase db) {
        int n = 400;
        Riffle worker = Fixtures.manual(db);
        Riffle leader = Fixtures.manual(db);
        try {
            Fixtures.enqueue(worker, "race", n);
            List<Job> jobs = Fixtures.claim(worker, "race", n);
            Fixtures.pause(Duration.ofMillis(20));
            Set<Long> completed = ConcurrentHashMap.newKeySet();
            Set<Long> rejected = ConcurrentHashMap.newKeySet();
            Mono<Void> completions = Flux.fromIterable(jobs)
                    .flatMap(j -> j.complete()
                            .doOnSuccess(v -> completed.add(j.id()))
                            .onErrorResume(AttemptRejectedException.class, e -> {
                                assertThat(e.reason()).isEqualTo(AttemptRejectedException.Reason.ALREADY_CLOSED);
                                rejected.add(j.id());
                                return Mono.empty();
                            }), 32, 1)
                    .then();
            Mono<List<RescuedAttempt>> rescue = Flux.range(0, 6)
                    .concatMap(i -> leader.maintenance().rescueStaleNow(Duration.ofMillis(1)), 1)
                    .flatMapIterable(l -> l)
                    .collectList();
            var both = Mono.zip(completions.subscribeOn(Schedulers.parallel()).thenReturn(true),
                    rescue.subscribeOn(Schedulers.parallel())).block(Fixtures.TIMEOUT);
            Set<Long> rescuedIds = new HashSet<>();
            both.getT2().forEach(r -> rescuedIds.add(r.jobId()));

            // Every attempt has exactly one winner: completed xor rescued; every rescued one's completion was rejected.
            assertThat(completed.size() + rescuedIds.size()).isEqualTo(n);
            // (An explicit intersection: AssertJ refuses an empty "any of" set, and on a fast run rescue may win none.)
            Set<Long> completedAndRescued = new HashSet<>(completed);
            completedAndRescued.retainAll(rescuedIds);
            assertThat(completedAndRescued).as("attempts both completed and rescued").isEmpty();
            assertThat(rejected).isEqualTo(rescuedIds);
            assertThat(Fixtures.doubleClosures(db)).isZero();
            assertThat(Fixtures.openClaims(db)).isZero();
            assertThat(db.queryLong("SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches")).isEqualTo(n);
            assertThat(db.queryLong("SELECT coalesce(sum(completed_count), 0) FROM receipt_completion_batches"))
                    .isEqualTo(completed.size());
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE state = 'retryable'")).isEqualTo(rescuedIds.size());
        } finally {
            Fixtures.close(worker, leader);
        }
    }
}
