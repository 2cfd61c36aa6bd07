package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RingStatus;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * The maintenance loop rotates a ring only when its current slot is due (issue #12 item 4,
 * docs/design/rings-and-proofs.md#cadence): never while the slot is younger than {@code rotationMinInterval}; then
 * once it is {@code rotationMaxAge} old, or holds more than {@code rotationMaxRows} rows. The loop offers a rotation
 * every 100 ms here, so without the cadence gate the ring would move on every tick. Intervals are read from the
 * rotation ledger's own {@code rotated_at} (database clock), so a slow machine can only make them longer. Each case has
 * a schema of its own (the jobs left behind would otherwise occupy the next case's slots).
 */
@RiffleTest(queueSlots = 8, claimSlots = 4)
class RotationCadenceIT {

    private static final Duration TICK = Duration.ofMillis(100);

    /** An engine running the stock loops, with the ring cadence given and no history floor. */
    private static Riffle looping(TestDatabase db, Consumer<MaintenanceConfig.Builder> cadence) {
        MaintenanceConfig.Builder m = MaintenanceConfig.builder().leaderRetry(TICK).rotationInterval(TICK)
                .historyRetention(Duration.ZERO);
        cadence.accept(m);
        MaintenanceConfig config = m.build();
        return Fixtures.manual(db, b -> b.maintenance(config));
    }

    private static long queueGeneration(TestDatabase db) {
        return db.queryLong("SELECT max(generation) FROM queue_ring_rotations");
    }

    /** Seconds (database clock) each rotation after generation {@code from} came after the one before it. */
    private static List<Double> gapsAfter(TestDatabase db, long from) {
        return db.queryRows("SELECT extract(epoch FROM r.rotated_at - p.rotated_at)::float8 AS gap "
                        + "FROM queue_ring_rotations r JOIN queue_ring_rotations p ON p.generation = r.generation - 1 "
                        + "WHERE r.generation > ? ORDER BY r.generation", from)
                .stream().map(row -> ((Number) row.get("gap")).doubleValue()).toList();
    }

    private static @Nullable RotateOutcome lastQueueRotate(Riffle riffle) {
        RingStatus s = riffle.maintenance().status().filter(x -> x.ring() == Ring.QUEUE).blockFirst(Fixtures.TIMEOUT);
        return s == null ? null : s.lastRotate();
    }

    private static void enqueue(Riffle riffle, String queue, int n) {
        Fixtures.enqueue(riffle, queue, n);
    }

    @Nested
    class OnAge {
        @Test
        void aYoungSmallSlotStaysCurrentUntilItReachesItsMaximumAge(TestDatabase db) {
            Riffle riffle = looping(db, m -> m.rotationMinInterval(Duration.ofMillis(500)).rotationMaxAge(Duration.ofSeconds(3))
                    .rotationMaxRows(1_000_000));
            try {
                // One job that nobody works keeps the ring from being idle; its slot is never free again, so the ring can
                // make at most 7 rotations, far fewer than the ticks of this test.
                enqueue(riffle, "cadence.age", 1);
                long start = queueGeneration(db);
                Fixtures.await("the queue ring left two slots on age", () -> queueGeneration(db) >= start + 2);
                assertThat(lastQueueRotate(riffle)).as("the loop's offers in between were declined")
                        .isIn(RotateOutcome.SKIPPED_NOT_DUE, RotateOutcome.ROTATED);
                List<Double> gaps = gapsAfter(db, start);
                assertThat(gaps).as("seconds between rotations (maximum age 3 s, offered every 100 ms)")
                        .isNotEmpty().allSatisfy(g -> assertThat(g).isGreaterThanOrEqualTo(3.0));
                // Right after a rotation the new slot is young and small: the loop's next offers are declined.
                long now = queueGeneration(db);
                Fixtures.await("the next rotation", () -> queueGeneration(db) == now + 1);
                Fixtures.pause(TICK.multipliedBy(5));
                assertThat(queueGeneration(db)).as("a slot half a second old was left").isEqualTo(now + 1);
                assertThat(lastQueueRotate(riffle)).isEqualTo(RotateOutcome.SKIPPED_NOT_DUE);
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class OnSize {
        @Test
        void aSlotHoldingMoreThanItsMaximumRowsIsLeftLongBeforeItsMaximumAge(TestDatabase db) {
            Riffle riffle = looping(db, m -> m.rotationMinInterval(Duration.ofMillis(200)).rotationMaxAge(Duration.ofHours(1))
                    .rotationMaxRows(200));
            try {
                long start = queueGeneration(db);
                int slot = (int) db.queryLong("SELECT slot FROM queue_ring_rotations WHERE generation = ?", start);
                // 20 ready rows and their segment: well under the bound. The statistics the estimate reads reach the
                // database within about a second; three seconds of ticks later the slot is still current.
                enqueue(riffle, "cadence.size", 20);
                Fixtures.pause(Duration.ofSeconds(3));
                assertThat(queueGeneration(db)).as("a slot of ~21 rows (bound 200) was left").isEqualTo(start);
                assertThat(lastQueueRotate(riffle)).isEqualTo(RotateOutcome.SKIPPED_NOT_DUE);

                enqueue(riffle, "cadence.size", 300);
                Fixtures.await("the queue ring left the slot past its size bound", () -> queueGeneration(db) == start + 1);
                assertThat(db.queryLong("SELECT ring_slot_rows('queue', ?)", slot)).as("rows estimated in the slot left")
                        .isGreaterThan(200);
                assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE ready_slot = ?", slot)).isEqualTo(320);
                assertThat(gapsAfter(db, start)).singleElement().satisfies(g -> assertThat(g).isLessThan(3600.0));

                // The new current slot is empty: size is about the current slot only, so the ring stays.
                Fixtures.pause(Duration.ofSeconds(2));
                assertThat(queueGeneration(db)).isEqualTo(start + 1);
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class MinimumInterval {
        @Test
        void aSlotOverItsSizeBoundStillStaysCurrentForTheMinimumInterval(TestDatabase db) {
            Riffle riffle = looping(db, m -> m.rotationMinInterval(Duration.ofSeconds(2)).rotationMaxAge(Duration.ofHours(1))
                    .rotationMaxRows(1));
            AtomicBoolean on = new AtomicBoolean(true);
            // Every slot is over its bound (one row) within moments of becoming current; only the minimum interval paces.
            Disposable producer = Flux.interval(Duration.ofMillis(50), Schedulers.parallel()).onBackpressureDrop()
                    .takeWhile(t -> on.get())
                    .concatMap(t -> riffle.client().enqueue(NewJob.builder("test.job").queue("cadence.min").args("{}").build()), 1)
                    .subscribe();
            try {
                long start = queueGeneration(db);
                Fixtures.await("three rotations under constant pressure", () -> queueGeneration(db) >= start + 3);
                on.set(false);
                List<Double> gaps = gapsAfter(db, start);
                assertThat(gaps).as("seconds between rotations (minimum interval 2 s, every slot over its bound)")
                        .hasSizeGreaterThanOrEqualTo(3).allSatisfy(g -> assertThat(g).isGreaterThanOrEqualTo(2.0));
            } finally {
                on.set(false);
                producer.dispose();
                Fixtures.close(riffle);
            }
        }
    }
}
