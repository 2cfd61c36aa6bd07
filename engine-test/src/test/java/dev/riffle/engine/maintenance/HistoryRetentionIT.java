package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RingStatus;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The history retention floor (issue #12 item 4, docs/design/rings-and-proofs.md#history-retention): terminal history
 * stays readable in {@code terminal_jobs} for at least {@code historyRetention} after it was written, because prune does
 * not truncate a queue slot holding younger terminal rows; and the floor never lets prune truncate open work, which
 * the proofs keep whatever its age. When the floor holds the slot rotation needs, the ring waits and its current slot
 * grows past its size bound. The queue ring has 4 slots, so three rotations by hand make a slot the next one.
 * Each case has a schema of its own.
 */
@RiffleTest(queueSlots = 4, claimSlots = 4)
class HistoryRetentionIT {

    private static final Duration FLOOR = Duration.ofSeconds(5);

    private static Riffle manual(TestDatabase db, Duration floor) {
        return Fixtures.manual(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false).historyRetention(floor)
                .build()));
    }

    private static int currentQueueSlot(TestDatabase db) {
        return (int) db.queryLong("SELECT slot FROM queue_ring_rotations ORDER BY generation DESC LIMIT 1");
    }

    /** Rotates the queue ring by hand until {@code slot} is the one rotation (and prune) needs next. */
    private static void makeNext(Riffle riffle, TestDatabase db, int slot) {
        for (int i = 0; i < 4 && (currentQueueSlot(db) + 1) % 4 != slot; i++) {
            assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
        }
        assertThat((currentQueueSlot(db) + 1) % 4).isEqualTo(slot);
    }

    private static PruneOutcome pruneQueue(Riffle riffle) {
        return riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT);
    }

    private static void completeAll(Riffle riffle, String queue, int n) {
        riffle.subscribe(queue).take(n).concatMap(j -> j.complete().thenReturn(j), 1).blockLast(Fixtures.TIMEOUT);
    }

    /** Terminal rows of these jobs readable through the public view, by job id. */
    private static long readable(TestDatabase db, List<Long> ids, String state) {
        return db.queryLong("SELECT count(DISTINCT job_id) FROM terminal_jobs WHERE job_id = ANY (?::bigint[]) "
                + "AND state::text = ?", ids.toArray(Long[]::new), state);
    }

    /** Ready rows of these jobs, by job id: what a truncate of their slot would take. */
    private static long readyRows(TestDatabase db, List<Long> ids) {
        // One array parameter: cast, or varargs would spread it into one parameter per id.
        return db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ANY (?::bigint[])", (Object) ids.toArray(Long[]::new));
    }

    /** Waits until the newest terminal row of slot {@code slot} is older than {@code floor} by the database clock. */
    private static void awaitFloorPassed(TestDatabase db, int slot, Duration floor) {
        Fixtures.await("the slot's history older than the floor", () -> db.queryLong(
                "SELECT (SELECT count(*) FROM receipt_completion_batches WHERE ready_slot = ? AND finalized_at > "
                        + "clock_timestamp() - make_interval(secs => ?)) + (SELECT count(*) FROM done_entries "
                        + "WHERE ready_slot = ? AND finalized_at > clock_timestamp() - make_interval(secs => ?))",
                slot, (double) floor.toSeconds(), slot, (double) floor.toSeconds()) == 0);
    }

    @Nested
    class CompletedHistory {
        @Test
        void staysReadableUntilTheFloorPassesThenItsSlotIsPruned(TestDatabase db) {
            Riffle riffle = manual(db, FLOOR);
            try {
                int slot = currentQueueSlot(db);
                List<Long> ids = Fixtures.enqueue(riffle, "history.done", 5);
                completeAll(riffle, "history.done", 5);
                assertThat(readable(db, ids, "completed")).isEqualTo(5);
                makeNext(riffle, db, slot);

                // Inert (claimed, completed, closed) but young: prune keeps it, and the history stays readable.
                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.SKIPPED_RETENTION);
                assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .as("the ring waits in front of the slot the floor holds").isEqualTo(RotateOutcome.SKIPPED_BUSY);
                assertThat(readable(db, ids, "completed")).isEqualTo(5);
                assertThat(readyRows(db, ids)).isEqualTo(5);

                awaitFloorPassed(db, slot, FLOOR);
                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.PRUNED);
                assertThat(readable(db, ids, "completed")).as("history older than the floor is pruned with its slot").isZero();
                assertThat(riffle.counts("history.done").block(Fixtures.TIMEOUT).completed())
                        .as("counts survive the truncate").isEqualTo(5);
                assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .as("a drained ring is idle once its last slot is pruned").isEqualTo(RotateOutcome.SKIPPED_IDLE);
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class CancelledHistory {
        @Test
        void aYoungCancelledRowKeepsItsSlotToo(TestDatabase db) {
            Riffle riffle = manual(db, FLOOR);
            try {
                int slot = currentQueueSlot(db);
                List<Long> ids = Fixtures.enqueue(riffle, "history.cancel", 1);
                assertThat(riffle.admin().cancel(ids.get(0)).block(Fixtures.TIMEOUT)).isEqualTo(CancelResult.CANCELLED_AVAILABLE);
                assertThat(readable(db, ids, "cancelled")).isEqualTo(1);
                makeNext(riffle, db, slot);

                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.SKIPPED_RETENTION);
                assertThat(readable(db, ids, "cancelled")).isEqualTo(1);

                awaitFloorPassed(db, slot, FLOOR);
                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.PRUNED);
                assertThat(readable(db, ids, "cancelled")).isZero();
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class OpenWork {
        @Test
        void isNeverTruncatedWhenTheFloorHasLongPassed(TestDatabase db) {
            Duration floor = Duration.ofSeconds(1);
            Riffle riffle = manual(db, floor);
            try {
                int slot = currentQueueSlot(db);
                List<Long> ids = Fixtures.enqueue(riffle, "history.open", 6);
                List<Job> held = Fixtures.claim(riffle, "history.open", 2); // claimed and never finished (yet)
                makeNext(riffle, db, slot);
                Fixtures.pause(floor.multipliedBy(2));

                // Four jobs still ready, two open attempts: nothing in the slot may go, however old it is.
                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.SKIPPED_PENDING_READY);
                assertThat(readyRows(db, ids)).as("ready rows of the six jobs, by id").isEqualTo(6);

                completeAll(riffle, "history.open", 4);
                awaitFloorPassed(db, slot, floor);
                assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.SKIPPED_UNCLOSED_CLAIMS);
                assertThat(readyRows(db, ids)).isEqualTo(6);
                for (Job j : held) {
                    assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", j.id()))
                            .as("the held job %d keeps its ready row", j.id()).isEqualTo(1);
                }

                // The held attempts finish: the slot is inert now, and young history holds it for the floor.
                for (Job j : held) {
                    j.complete().block(Fixtures.TIMEOUT);
                }
                assertThat(readable(db, ids, "completed")).isEqualTo(6);
                PruneOutcome p = pruneQueue(riffle);
                assertThat(p).isIn(PruneOutcome.SKIPPED_RETENTION, PruneOutcome.PRUNED);
                if (p == PruneOutcome.SKIPPED_RETENTION) {
                    awaitFloorPassed(db, slot, floor);
                    assertThat(pruneQueue(riffle)).isEqualTo(PruneOutcome.PRUNED);
                }
                assertThat(readyRows(db, ids)).isZero();
                assertThat(riffle.counts("history.open").block(Fixtures.TIMEOUT).completed()).isEqualTo(6);
                assertThat(Fixtures.doubleClosures(db)).isZero();
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class FullRing {
        /**
         * The stock loops at a fast cadence (a slot is left after 200 ms, or 5 rows) and a floor of a minute: the ring
         * goes round once and then waits in front of the oldest slot, whose completed history is younger than the
         * floor. Work goes on in the current slot, which grows past its size bound; every job completes once and all
         * of their history stays readable.
         */
        @Test
        void theFloorWinsOverTheSizeBoundAndTheRingWaits(TestDatabase db) {
            Riffle riffle = Fixtures.manual(db, b -> b.maintenance(MaintenanceConfig.builder()
                    .leaderRetry(Duration.ofMillis(100)).rotationInterval(Duration.ofMillis(100))
                    .rotationMinInterval(Duration.ofMillis(200)).rotationMaxAge(Duration.ofMillis(200))
                    .claimRotationMaxAge(Duration.ofMillis(200)).rotationMaxRows(5)
                    .historyRetention(Duration.ofMinutes(1)).build()));
            Set<Long> done = ConcurrentHashMap.newKeySet();
            Disposable workers = riffle.work(Map.of("test.job", job -> {
                        assertThat(done.add(job.id())).as("delivered twice: %d", job.id()).isTrue();
                        return Mono.just(JobOutcome.complete());
                    }), 8, "history.full").subscribe();
            AtomicBoolean on = new AtomicBoolean(true);
            Set<Long> enqueued = ConcurrentHashMap.newKeySet();
            Disposable producer = Flux.interval(Duration.ofMillis(50), Schedulers.parallel()).onBackpressureDrop()
                    .takeWhile(t -> on.get())
                    .concatMap(t -> riffle.client().enqueue(NewJob.builder("test.job").queue("history.full").args("{}").build())
                            .doOnNext(enqueued::add), 1)
                    .subscribe();
            try {
                Fixtures.await("the ring went round once and waits", () -> {
                    RingStatus s = riffle.maintenance().status().filter(x -> x.ring() == Ring.QUEUE).blockFirst(Fixtures.TIMEOUT);
                    return s != null && s.generation() == 3 && s.lastPrune() == PruneOutcome.SKIPPED_RETENTION;
                });
                // A few more seconds of work while the ring waits: no rotation, the current slot takes it all.
                Fixtures.pause(Duration.ofSeconds(3));
                on.set(false);
                producer.dispose();
                Fixtures.await("every job done", () -> done.size() == enqueued.size());
                assertThat(db.queryLong("SELECT max(generation) FROM queue_ring_rotations"))
                        .as("the ring stayed in front of the slot the floor holds").isEqualTo(3);
                int current = currentQueueSlot(db);
                assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE ready_slot = ?", current))
                        .as("the current slot grew past its size bound of 5 rows").isGreaterThan(5);
                List<Long> ids = List.copyOf(enqueued);
                assertThat(readable(db, ids, "completed")).as("all history readable").isEqualTo(ids.size());
                assertThat(readyRows(db, ids)).isEqualTo(ids.size());
            } finally {
                on.set(false);
                producer.dispose();
                workers.dispose();
                Fixtures.close(riffle);
            }
        }
    }
}
