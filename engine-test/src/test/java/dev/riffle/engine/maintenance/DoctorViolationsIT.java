package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Each check of the proof doctor can fail: every test breaks one invariant with raw SQL in this class's own schema and
 * sees the doctor name it, after seeing that check pass first. The tests share the schema, so each asserts on its own
 * check only (and each check is broken by one test only).
 */
@RiffleTest(claimSlots = 2, queueSlots = 4)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DoctorViolationsIT {

    private Riffle riffle;

    @BeforeAll
    void start(TestDatabase db) {
        riffle = Fixtures.manual(db);
    }

    @AfterAll
    void stop() {
        Fixtures.close(riffle);
    }

    private List<DoctorReport.Violation> violations(String check) {
        DoctorReport report = riffle.admin().doctor().block(Fixtures.TIMEOUT);
        List<DoctorReport.Violation> found = report.violations(check);
        assertThat(report.ok()).isEqualTo(report.violations().isEmpty());
        return found;
    }

    @Test
    void anOrphanClosureIsReported(TestDatabase db) {
        assertThat(violations(DoctorReport.ORPHAN_CLOSURE)).isEmpty();
        db.execute("INSERT INTO lease_claim_closure_batches (claim_slot, outcome, closed_count, receipt_ids, receipt_ranges, closed_at) "
                + "VALUES (0, 'completed', 1, '{987654321}', '{[987654321,987654322)}', now())");
        assertThat(violations(DoctorReport.ORPHAN_CLOSURE)).singleElement().satisfies(v -> {
            assertThat(v.ring()).isEqualTo(Ring.CLAIM);
            assertThat(v.slot()).isZero();
            assertThat(v.detail()).contains("987654321");
        });
        // Claim slot 0 is the current one (the other tests' claims are there too): only its balance is off.
        assertThat(violations(DoctorReport.CLAIM_BALANCE)).singleElement().satisfies(v -> {
            assertThat(v.slot()).isZero();
            assertThat(v.detail()).contains("closure(s) match no open claim");
        });
    }

    @Test
    void aSecondClosureOfAReceiptIsReported(TestDatabase db) {
        assertThat(violations(DoctorReport.DOUBLE_CLOSURE)).isEmpty();
        Fixtures.enqueue(riffle, "double", 1);
        Job job = Fixtures.claim(riffle, "double", 1).get(0);
        job.complete().block(Fixtures.TIMEOUT);
        assertThat(violations(DoctorReport.DOUBLE_CLOSURE)).isEmpty();
        db.execute("INSERT INTO lease_claim_closure_batches (claim_slot, ready_slot, ready_generation, outcome, closed_count, "
                + "receipt_ids, receipt_ranges, closed_at) SELECT claim_slot, ready_slot, ready_generation, 'completed', "
                + "closed_count, receipt_ids, receipt_ranges, now() FROM lease_claim_closure_batches "
                + "WHERE receipt_ranges @> (SELECT b.receipt_ids[1] FROM lease_claim_batches b WHERE b.job_ids[1] = ?)",
                job.id());
        assertThat(violations(DoctorReport.DOUBLE_CLOSURE)).singleElement()
                .satisfies(v -> assertThat(v.detail()).contains("close 1 receipt(s) more than once"));
        assertThat(violations(DoctorReport.CLAIM_BALANCE)).singleElement()
                .satisfies(v -> assertThat(v.detail()).contains("closure(s) match no open claim"));
    }

    @Test
    void anUpdateOnAnAppendOnlyChildIsReported(TestDatabase db) {
        Fixtures.enqueue(riffle, "upd", 1);
        assertThat(violations(DoctorReport.APPEND_ONLY)).isEmpty();
        assertThat(db.execute("UPDATE ready_entries_0 SET attempted_at = attempted_at WHERE queue = 'upd'")).isEqualTo(1);
        // The statistics reach the doctor once the updating session has flushed them (at the latest when it ends).
        Fixtures.await("the update is reported", () -> !violations(DoctorReport.APPEND_ONLY).isEmpty());
        assertThat(violations(DoctorReport.APPEND_ONLY)).singleElement()
                .satisfies(v -> assertThat(v.detail()).startsWith("ready_entries_0 has 1 update(s) and 0 delete(s)"));
    }

    @Test
    void rowsOfAnotherGenerationAreReported(TestDatabase db) {
        assertThat(violations(DoctorReport.GENERATION)).isEmpty();
        // Queue slot 0 is at generation 0; slot 2 has not been entered yet.
        db.execute("INSERT INTO ready_tombstones (ready_slot, ready_generation, queue, priority, enqueue_shard, lane_seq, "
                + "job_id, tombstoned_at) VALUES (0, 4, 'gen', 1, 0, 1, 1, now()), (2, 0, 'gen', 1, 0, 1, 1, now())");
        assertThat(violations(DoctorReport.GENERATION)).extracting(DoctorReport.Violation::detail).containsExactly(
                "ready_tombstones_0 holds rows of generation 4; the slot is at generation 0",
                "ready_tombstones_2 holds rows, but the ring has not entered slot 2 yet");
    }

    @Test
    void cursorsOutOfBoundsAreReported(TestDatabase db) {
        assertThat(violations(DoctorReport.RESCUE_CURSOR)).isEmpty();
        assertThat(violations(DoctorReport.LANE_CURSOR)).isEmpty();
        assertThat(violations(DoctorReport.RING_CURSOR)).isEmpty();
        Fixtures.enqueue(riffle, "lane", 2);
        db.execute("UPDATE claim_ring_slots SET rescue_cursor_claimed_at = now() - interval '1 hour', "
                + "rescue_cursor_job_id = 42 WHERE slot = 1");
        db.execute("SELECT setval(seq_name::regclass, 10) FROM queue_claim_heads WHERE queue = 'lane'");
        db.execute("INSERT INTO lease_ring_rotations (generation, slot) VALUES (1, 0)");
        assertThat(violations(DoctorReport.RESCUE_CURSOR)).singleElement().satisfies(v -> {
            assertThat(v.slot()).isEqualTo(1);
            assertThat(v.detail()).contains("job 42) is past every claim in the slot");
        });
        assertThat(violations(DoctorReport.LANE_CURSOR)).singleElement()
                .satisfies(v -> assertThat(v.detail()).isEqualTo("lane (lane, 2, 0): claim cursor 11 is past the enqueue head 3"));
        assertThat(violations(DoctorReport.RING_CURSOR)).singleElement().satisfies(v -> {
            assertThat(v.ring()).isEqualTo(Ring.LEASE);
            assertThat(v.detail()).contains("generation 1 at slot 0");
        });
    }
}
