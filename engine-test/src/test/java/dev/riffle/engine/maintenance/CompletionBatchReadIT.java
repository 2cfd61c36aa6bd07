package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * complete_compact reads each claim batch its items name once, however many of its items one completion carries, and
 * still judges every item against its own position in that batch. Reading the stored batch row once per item
 * decompressed the batch's arrays once per item (a batch of more than about 50 jobs is stored compressed): completing
 * 256 jobs of one batch cost 3.2 ms against 1.6 ms now (pgbench, docs/benchmarks.md, session 11).
 */
@RiffleTest
class CompletionBatchReadIT {

    private record Claimed(int slot, long batch, int idx, long job, long lease, long receipt) {
        Claimed withIdx(int i) {
            return new Claimed(slot, batch, i, job, lease, receipt);
        }

        Claimed withJob(long j) {
            return new Claimed(slot, batch, idx, j, lease, receipt);
        }
    }

    private static void enqueue(Connection c, String queue, int n) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM enqueue_jobs(array_fill(?::text, "
                + "ARRAY[?]), array_fill('k'::text, ARRAY[?]), array_fill('{}'::jsonb, ARRAY[?]), "
                + "array_fill(1::smallint, ARRAY[?]), array_fill(5::smallint, ARRAY[?]), "
                + "array_fill(NULL::timestamptz, ARRAY[?]))")) {
            ps.setString(1, queue);
            for (int i = 2; i <= 7; i++) {
                ps.setInt(i, n);
            }
            ps.executeQuery().close();
        }
    }

    private static List<Claimed> claim(Connection c, String queue, int max) throws Exception {
        List<Claimed> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT claim_slot, batch_id, batch_index, job_id, run_lease, "
                + "receipt_id FROM claim_ready(ARRAY[?], ARRAY[0], ?) WHERE status = 'claimed'")) {
            ps.setString(1, queue);
            ps.setInt(2, max);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Claimed(rs.getInt(1), rs.getLong(2), rs.getInt(3), rs.getLong(4), rs.getLong(5),
                            rs.getLong(6)));
                }
            }
        }
        return out;
    }

    /** complete_compact's status for each item, in input order. */
    private static List<String> complete(Connection c, List<Claimed> items) throws Exception {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT x.status FROM complete_compact(?, ?, ?, ?, ?, ?) WITH ORDINALITY AS x(j, r, status, ord) "
                        + "ORDER BY x.ord")) {
            ps.setArray(1, c.createArrayOf("int4", items.stream().map(Claimed::slot).toArray()));
            ps.setArray(2, c.createArrayOf("int8", items.stream().map(Claimed::batch).toArray()));
            ps.setArray(3, c.createArrayOf("int4", items.stream().map(Claimed::idx).toArray()));
            ps.setArray(4, c.createArrayOf("int8", items.stream().map(Claimed::job).toArray()));
            ps.setArray(5, c.createArrayOf("int8", items.stream().map(Claimed::lease).toArray()));
            ps.setArray(6, c.createArrayOf("int8", items.stream().map(Claimed::receipt).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** Rows this transaction has read from the child so far: by sequential scans and through any of its indexes. */
    private static long batchRowsRead(Connection c, int slot) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_stat_get_xact_tuples_returned(t.oid) + coalesce(("
                + "SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) FROM pg_index i "
                + "WHERE i.indrelid = t.oid), 0) FROM pg_class t WHERE t.oid = to_regclass(?)")) {
            ps.setString(1, "lease_claim_batches_" + slot);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    @Test
    void aCompletionOfAWholeBatchReadsItsBatchRowOnce(TestDatabase db) throws Exception {
        try (Connection c = db.openJdbc()) {
            c.setAutoCommit(true);
            enqueue(c, "whole", 200);
            List<Claimed> batch = claim(c, "whole", 200);
            assertThat(batch).hasSize(200);
            assertThat(batch).extracting(Claimed::batch).containsOnly(batch.get(0).batch());
            int slot = batch.get(0).slot();

            c.setAutoCommit(false);
            long before = batchRowsRead(c, slot);
            assertThat(complete(c, batch)).hasSize(200).containsOnly("applied");
            long read = batchRowsRead(c, slot) - before;
            c.commit();
            // One index probe returning one row per batch (the per-item probe returned 200, one per item).
            assertThat(read).as("batch rows read completing 200 jobs of one batch").isBetween(1L, 2L);

            c.setAutoCommit(true);
            assertThat(complete(c, batch)).as("the same completion again: its first try committed")
                    .containsOnly("applied_before");
        }
    }

    @Test
    void itemsOfTwoBatchesAreEachJudgedAgainstTheirOwnPosition(TestDatabase db) throws Exception {
        try (Connection c = db.openJdbc()) {
            c.setAutoCommit(true);
            enqueue(c, "pair", 120);
            List<Claimed> a = claim(c, "pair", 60);
            List<Claimed> b = claim(c, "pair", 60);
            assertThat(a).hasSize(60);
            assertThat(b).hasSize(60);
            assertThat(a.get(0).batch()).isNotEqualTo(b.get(0).batch());

            List<Claimed> items = new ArrayList<>();
            items.add(a.get(0));                                   // 1: applied
            items.add(b.get(59));                                  // 2: applied (last position of the other batch)
            items.add(a.get(1).withIdx(0));                        // 3: stale, position 0
            items.add(a.get(59).withIdx(61));                      // 4: stale, past the batch's end
            items.add(a.get(2).withIdx(4));                        // 5: stale, another item's position
            items.add(b.get(3).withJob(a.get(3).job()));           // 6: stale, a job of the other batch
            items.add(new Claimed(a.get(5).slot(), b.get(5).batch(), a.get(5).idx(), a.get(5).job(),
                    a.get(5).lease(), a.get(5).receipt()));        // 7: stale, the other batch at the same position
            items.add(b.get(10));                                  // 8: applied
            assertThat(complete(c, items)).containsExactly("applied", "applied", "stale", "stale", "stale", "stale",
                    "stale", "applied");

            // Nothing the forged items named was closed by them: every other job of both batches completes now.
            List<Claimed> rest = new ArrayList<>();
            for (List<Claimed> batch : List.of(a, b)) {
                for (Claimed x : batch) {
                    if (!items.contains(x)) {
                        rest.add(x);
                    }
                }
            }
            assertThat(rest).hasSize(117);
            assertThat(complete(c, rest)).hasSize(117).containsOnly("applied");
        }
    }
}
