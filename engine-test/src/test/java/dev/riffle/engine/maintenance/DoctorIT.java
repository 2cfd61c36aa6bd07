package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * The proof doctor on a live schema (docs/operations.md#proof-doctor): clean after a drain, open attempts named by
 * (job id, run lease), and each ring's prune blocker named with what it consists of. Every ring is stepped by hand;
 * each nested class has a schema of its own.
 */
@RiffleTest(claimSlots = 2, queueSlots = 4)
class DoctorIT {

    private static DoctorReport doctor(Riffle riffle) {
        return riffle.admin().doctor().block(Fixtures.TIMEOUT);
    }

    private static Riffle noHistoryFloor(TestDatabase db) {
        return Fixtures.manual(db, b -> b.maintenance(MaintenanceConfig.builder().enabled(false)
                .historyRetention(Duration.ZERO).build()));
    }

    @Nested
    class AfterADrain {
        @Test
        void aDrainedSchemaIsCleanAndEveryRingPrunesToEmpty(TestDatabase db) {
            Riffle riffle = noHistoryFloor(db);
            try {
                List<Long> ids = Fixtures.enqueue(riffle, "clean", 12);
                Flux.fromIterable(Fixtures.claim(riffle, "clean", 12)).concatMap(Job::complete).blockLast(Fixtures.TIMEOUT);
                DoctorReport busy = doctor(riffle);
                assertThat(busy.violations()).isEmpty();
                assertThat(busy.ok()).isTrue();
                assertThat(busy.openAttempts()).isEmpty();
                assertThat(busy.rings()).extracting(DoctorReport.RingPrune::ring)
                        .containsExactlyInAnyOrder(Ring.QUEUE, Ring.CLAIM, Ring.LEASE);

                // Around both rings until the drained slots are truncated: nothing is left to block a prune.
                for (int i = 0; i < 4; i++) {
                    for (Ring ring : List.of(Ring.CLAIM, Ring.QUEUE)) {
                        riffle.maintenance().pruneNow(ring).block(Fixtures.TIMEOUT);
                        riffle.maintenance().rotateNow(ring).block(Fixtures.TIMEOUT);
                    }
                }
                DoctorReport after = doctor(riffle);
                assertThat(after.ok()).as(after.violations().toString()).isTrue();
                assertThat(after.rings()).allSatisfy(r -> assertThat(r.blocked()).as(r.toString()).isFalse());
                assertThat(ids).hasSize(12);
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class OpenAttempts {
        @Test
        void openAttemptsAreNamedAndBlockTheClaimSlotUntilTheyClose(TestDatabase db) {
            Riffle riffle = noHistoryFloor(db);
            try {
                Fixtures.enqueue(riffle, "open", 3);
                List<Job> held = Fixtures.claim(riffle, "open", 2);
                DoctorReport report = doctor(riffle);
                assertThat(report.ok()).as(report.violations().toString()).isTrue();
                assertThat(report.openAttempts())
                        .extracting(a -> a.ring() + "/" + a.slot() + "/" + a.jobId() + "/" + a.runLease())
                        .containsExactlyInAnyOrderElementsOf(held.stream()
                                .map(j -> Ring.CLAIM + "/0/" + j.id() + "/" + j.runLease()).toList());
                assertThat(report.openAttempts()).allSatisfy(a -> assertThat(a.note()).contains("2 open attempt(s)"));
                assertThat(report.ring(Ring.CLAIM).state()).isEqualTo("empty");

                // Sealed: the slot the next claim prune targets now holds the two open attempts, by name.
                assertThat(riffle.maintenance().rotateNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
                DoctorReport.RingPrune claim = doctor(riffle).ring(Ring.CLAIM);
                assertThat(claim.slot()).isZero();
                assertThat(claim.state()).isEqualTo("open_claims");
                assertThat(claim.detail()).contains("2 open attempt(s)");
                assertThat(claim.blockedBy()).extracting(DoctorReport.Attempt::jobId)
                        .containsExactlyInAnyOrderElementsOf(held.stream().map(Job::id).toList());
                assertThat(riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_OPEN_CLAIMS);

                Flux.fromIterable(held).concatMap(Job::complete).blockLast(Fixtures.TIMEOUT);
                DoctorReport closed = doctor(riffle);
                assertThat(closed.openAttempts()).isEmpty();
                assertThat(closed.ring(Ring.CLAIM).state()).isEqualTo("prunable");
                assertThat(closed.ring(Ring.CLAIM).blockedBy()).isEmpty();
                assertThat(riffle.maintenance().pruneNow(Ring.CLAIM).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
                assertThat(doctor(riffle).ring(Ring.CLAIM).state()).isEqualTo("empty");
            } finally {
                Fixtures.close(riffle);
            }
        }
    }

    @Nested
    class QueueRingBlockers {
        @Test
        void eachQueuePruneBlockerIsNamedAsPruneMeetsIt(TestDatabase db) throws Exception {
            Riffle floor = Fixtures.manual(db); // the default history retention: 5 minutes
            Riffle riffle = noHistoryFloor(db);
            try {
                long id = Fixtures.enqueue(riffle, "blk", 1).get(0);
                for (int i = 0; i < 3; i++) {
                    assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
                }
                DoctorReport.RingPrune queue = doctor(riffle).ring(Ring.QUEUE);
                assertThat(queue.slot()).isZero();
                assertThat(queue.state()).isEqualTo("pending_ready");
                assertThat(queue.blockedBy()).singleElement().satisfies(a -> {
                    assertThat(a.jobId()).isEqualTo(id);
                    assertThat(a.note()).startsWith("ready (blk, ");
                });
                assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_PENDING_READY);

                Job job = Fixtures.claim(riffle, "blk", 1).get(0);
                queue = doctor(riffle).ring(Ring.QUEUE);
                assertThat(queue.state()).isEqualTo("unclosed_claims");
                assertThat(queue.blockedBy()).singleElement().satisfies(a -> {
                    assertThat(a.jobId()).isEqualTo(id);
                    assertThat(a.runLease()).isEqualTo(job.runLease());
                });
                assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_UNCLOSED_CLAIMS);

                job.complete().block(Fixtures.TIMEOUT);
                assertThat(doctor(floor).ring(Ring.QUEUE).state()).as("judged with a 5 minute floor").isEqualTo("retention");
                assertThat(floor.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_RETENTION);
                assertThat(doctor(riffle).ring(Ring.QUEUE).state()).isEqualTo("prunable");

                // A transaction left open on the slot (a producer across a lap, docs/adr/0005) is named by pid.
                try (Connection open = db.openJdbc()) {
                    open.setAutoCommit(false);
                    long pid;
                    try (Statement st = open.createStatement()) {
                        st.execute("LOCK TABLE ready_entries_0 IN ROW EXCLUSIVE MODE");
                        var rs = st.executeQuery("SELECT pg_backend_pid()");
                        rs.next();
                        pid = rs.getLong(1);
                    }
                    Fixtures.await("the open transaction is named", () -> {
                        DoctorReport.RingPrune q = doctor(riffle).ring(Ring.QUEUE);
                        return q.state().equals("lock_held") && q.detail().contains("pid " + pid + " ");
                    });
                    assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.BLOCKED);
                    open.rollback();
                }
                assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
                DoctorReport end = doctor(riffle);
                assertThat(end.ok()).as(end.violations().toString()).isTrue();
                assertThat(end.ring(Ring.QUEUE).state()).isEqualTo("empty");
            } finally {
                Fixtures.close(floor, riffle);
            }
        }
    }

    @Nested
    class Leases {
        @Test
        void aLiveLeaseIsNamedAsWhatHoldsTheLeaseRingAndItsQueueSlot(TestDatabase db) {
            Riffle riffle = Fixtures.manual(db, b -> b.queue(QueueConfig.of("leased").withMaterializedLeases())
                    .maintenance(MaintenanceConfig.builder().enabled(false).historyRetention(Duration.ZERO).build()));
            try {
                Fixtures.enqueue(riffle, "leased", 1);
                Job job = Fixtures.claim(riffle, "leased", 1).get(0);
                for (int i = 0; i < 7; i++) {
                    assertThat(riffle.maintenance().rotateNow(Ring.LEASE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
                }
                for (int i = 0; i < 3; i++) {
                    assertThat(riffle.maintenance().rotateNow(Ring.QUEUE).block(Fixtures.TIMEOUT)).isEqualTo(RotateOutcome.ROTATED);
                }
                DoctorReport report = doctor(riffle);
                assertThat(report.ok()).as(report.violations().toString()).isTrue();
                DoctorReport.RingPrune lease = report.ring(Ring.LEASE);
                assertThat(lease.slot()).isZero();
                assertThat(lease.state()).isEqualTo("lease_active");
                assertThat(lease.blockedBy()).singleElement().satisfies(a -> {
                    assertThat(a.jobId()).isEqualTo(job.id());
                    assertThat(a.runLease()).isEqualTo(job.runLease());
                    assertThat(a.note()).isEqualTo("lease");
                });
                assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_LEASE_ACTIVE);
                DoctorReport.RingPrune queue = report.ring(Ring.QUEUE);
                assertThat(queue.state()).isEqualTo("active_leases");
                assertThat(queue.blockedBy()).extracting(DoctorReport.Attempt::jobId).containsExactly(job.id());
                assertThat(riffle.maintenance().pruneNow(Ring.QUEUE).block(Fixtures.TIMEOUT))
                        .isEqualTo(PruneOutcome.SKIPPED_ACTIVE_LEASES);

                job.complete().block(Fixtures.TIMEOUT);
                DoctorReport done = doctor(riffle);
                assertThat(done.ring(Ring.LEASE).state()).as("the ended lease left pages to truncate").isEqualTo("prunable");
                assertThat(done.ring(Ring.QUEUE).state()).isEqualTo("prunable");
                assertThat(riffle.maintenance().pruneNow(Ring.LEASE).block(Fixtures.TIMEOUT)).isEqualTo(PruneOutcome.PRUNED);
                assertThat(doctor(riffle).ring(Ring.LEASE).state()).isEqualTo("empty");
            } finally {
                Fixtures.close(riffle);
            }
        }
    }
}
