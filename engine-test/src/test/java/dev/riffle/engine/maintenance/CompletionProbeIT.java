package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A completion's cached plan must stay a probe per item however full its claim slot grows (ADR 0009, item 6). The
 * per-slot statement of complete_compact is planned once per session, typically while its claim-slot child is nearly
 * empty (after a prune's TRUNCATE), and kept as the slot fills. Written as a join, that plan was once an index scan on
 * claim_slot alone with batch_id as a join filter: every item read every batch of the slot. This test builds the plan
 * on a near-empty child, fills the child with 150 batches in the same session, then counts the batch rows one
 * completion of 10 items reads (the session's own transaction counters, so no statistics flush is awaited).
 */
@RiffleTest
class CompletionProbeIT {

    private record Claimed(int slot, long batch, int idx, long job, long lease, long receipt) {}

    private static List<Claimed> claim(Connection c, int max) throws Exception {
        List<Claimed> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT claim_slot, batch_id, batch_index, job_id, run_lease, "
                + "receipt_id FROM claim_ready(ARRAY['probe'], ARRAY[0], ?) WHERE status = 'claimed'")) {
            ps.setInt(1, max);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Claimed(rs.getInt(1), rs.getLong(2), rs.getInt(3), rs.getLong(4), rs.getLong(5),
                            rs.getLong(6)));
                }
            }
        }
        return out;
    }

    private static int complete(Connection c, List<Claimed> items) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FILTER (WHERE status = 'applied') FROM complete_compact(?, ?, ?, ?, ?, ?)")) {
            ps.setArray(1, c.createArrayOf("int4", items.stream().map(Claimed::slot).toArray()));
            ps.setArray(2, c.createArrayOf("int8", items.stream().map(Claimed::batch).toArray()));
            ps.setArray(3, c.createArrayOf("int4", items.stream().map(Claimed::idx).toArray()));
            ps.setArray(4, c.createArrayOf("int8", items.stream().map(Claimed::job).toArray()));
            ps.setArray(5, c.createArrayOf("int8", items.stream().map(Claimed::lease).toArray()));
            ps.setArray(6, c.createArrayOf("int8", items.stream().map(Claimed::receipt).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /** Rows this transaction has read from the child so far: by sequential scans and through any of its indexes. */
    private static long batchRowsRead(Connection c, int slot) throws Exception {
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_stat_get_xact_tuples_returned(t.oid) + coalesce((SELECT "
                     + "sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) FROM pg_index i WHERE i.indrelid = t.oid), 0)"
                     + " FROM pg_class t WHERE t.oid = to_regclass('lease_claim_batches_" + slot + "')")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void aCompletionReadsOnlyTheBatchRowsOfItsItemsHoweverFullTheSlot(TestDatabase db) throws Exception {
        try (Connection c = db.openJdbc()) {
            c.setAutoCommit(true);
            try (Statement st = c.createStatement()) {
                st.execute("SELECT count(*) FROM enqueue_jobs(array_fill('probe'::text, ARRAY[301]), "
                        + "array_fill('k'::text, ARRAY[301]), array_fill('{}'::jsonb, ARRAY[301]), "
                        + "array_fill(1::smallint, ARRAY[301]), array_fill(5::smallint, ARRAY[301]), "
                        + "array_fill(NULL::timestamptz, ARRAY[301]))");
            }
            // The plan is built here, on a child holding one batch.
            List<Claimed> first = claim(c, 1);
            assertThat(first).hasSize(1);
            assertThat(complete(c, first)).isEqualTo(1);

            List<Claimed> claimed = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                claimed.addAll(claim(c, 2));
            }
            assertThat(claimed).hasSize(300);
            int slot = first.get(0).slot();
            assertThat(claimed).allMatch(x -> x.slot() == slot);

            // One item from each of ten batches, in one completion, in a transaction of its own.
            List<Claimed> ten = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                ten.add(claimed.get(i * 30));
            }
            c.setAutoCommit(false);
            long before = batchRowsRead(c, slot);
            assertThat(complete(c, ten)).isEqualTo(10);
            long read = batchRowsRead(c, slot) - before;
            c.commit();
            assertThat(read).as("batch rows read by a completion of 10 items from a slot of 151 batches")
                    .isBetween(10L, 20L);
        }
    }
}
