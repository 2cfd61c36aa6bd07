package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.fault.CompletionOracle;
import dev.riffle.engine.test.fault.PgCluster;
import dev.riffle.engine.test.fault.PgFaults;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * S27, hot-path part, on a cluster this class owns: an idle-in-transaction session holding an xid pins the xmin
 * horizon for the whole run while an engine enqueues and drains 5,000 jobs.
 *
 * <p>What it proves: the pin costs no correctness (every job completed exactly once), and the hot path creates no
 * garbage that the pin would trap: the closure partitions have no dead tuples at all (exact, by
 * {@code pgstattuple}, and by {@code n_dead_tup}), and no append-only partition saw a single UPDATE or DELETE. A
 * control table whose rows were deleted under the same pin still holds them after {@code VACUUM}, which shows the
 * pin was real: had the hot path updated or deleted rows, their dead versions would still be there too.
 *
 * <p>Rotation and prune under the pin (TRUNCATE does not wait for xmin) belong to the ring scenarios.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(180)
class PinnedXminIT {

    @RegisterExtension
    static final PgCluster PG = PgCluster.create();

    private static final String SCHEMA = "pinned_it";
    private static final String QUEUE = "pinned";
    private static final int JOBS = 5_000;
    private static final int CONTROL_ROWS = 200;
    private static final List<String> APPEND_ONLY = List.of("ready_entries", "done_entries", "receipt_completion_batches",
            "ready_claim_attempt_batches", "lease_claim_batches", "lease_claim_closure_batches");

    @Test
    void aPinnedHorizonCostsNoCorrectnessAndTrapsNoHotPathGarbage() {
        Fixtures.migrate(PG, SCHEMA);
        DatabaseUrl url = PG.url();
        Sql.execute(url, null, "CREATE EXTENSION IF NOT EXISTS pgstattuple");
        Sql.execute(url, null, "CREATE TABLE public.pin_control (i int)");
        long t0 = System.nanoTime();
        String app = Fixtures.appName("pinned");
        try (PgFaults.Hold pin = PG.holdXid()) {
            Sql.execute(url, null, "INSERT INTO public.pin_control SELECT generate_series(1, " + CONTROL_ROWS + ")");
            Sql.execute(url, null, "DELETE FROM public.pin_control");

            Riffle riffle = Fixtures.start(url, SCHEMA, app, b -> {});
            CompletionOracle.Report report;
            try (Drain drain = Drain.start(List.of(riffle), QUEUE, 2, 32, Duration.ZERO)) {
                List<Long> ids = Fixtures.enqueue(riffle, QUEUE, JOBS);
                report = CompletionOracle.awaitDrained(url, SCHEMA, QUEUE, ids, JOBS, Duration.ofSeconds(60));
                System.out.printf("PinnedXminIT: drained %d jobs under a pinned xmin in %s; %s%n", JOBS,
                        Fixtures.seconds(t0), drain.summary());
            } finally {
                Fixtures.close(riffle);
            }
            report.assertExactlyOnce();
            assertThat(report.completedClosures()).isEqualTo(JOBS);

            // The pin held for the whole run: same session, same xid, still idle in transaction.
            List<Map<String, Object>> holder = Sql.queryRows(url, null,
                    "SELECT state, backend_xid::text::bigint AS xid FROM pg_stat_activity WHERE pid = ?", pin.backendPid());
            assertThat(holder).hasSize(1);
            assertThat(holder.get(0).get("state")).isEqualTo("idle in transaction");
            assertThat(((Number) holder.get(0).get("xid")).longValue()).isEqualTo(pin.xid() & 0xFFFF_FFFFL);

            Sql.execute(url, null, "VACUUM public.pin_control");
            assertThat(Sql.queryLong(url, null, "SELECT dead_tuple_count FROM pgstattuple('public.pin_control')"))
                    .as("rows deleted under the pin stay dead after VACUUM (the pin is effective)").isEqualTo(CONTROL_ROWS);

            List<Map<String, Object>> closures = Sql.queryRows(url, SCHEMA, "SELECT c.relname, "
                    + "(pgstattuple(c.oid)).dead_tuple_count AS dead FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    + "WHERE n.nspname = ? AND c.relname ~ '^lease_claim_closure_batches_[0-9]+$'", SCHEMA);
            assertThat(closures).isNotEmpty();
            assertThat(closures).as("closure partitions, exact dead tuples")
                    .allSatisfy(r -> assertThat(((Number) r.get("dead")).longValue()).as("%s", r.get("relname")).isZero());

            // Counters reach pg_stat_user_tables when backends flush them (the engine's at disconnect). Wait until
            // every insert is visible, so zero updates and deletes is an observation rather than a stale snapshot.
            String insSql = "SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = ? "
                    + "AND relname ~ '^ready_entries_[0-9]+$'";
            assertThat(Fixtures.await(() -> Sql.queryLong(url, null, insSql, SCHEMA) >= JOBS, Duration.ofSeconds(20)))
                    .as("ready_entries inserts visible in pg_stat_user_tables").isTrue();
            for (String table : APPEND_ONLY) {
                List<Map<String, Object>> rows = Sql.queryRows(url, null, "SELECT relname, n_tup_upd, n_tup_del, n_dead_tup "
                        + "FROM pg_stat_user_tables WHERE schemaname = ? AND relname ~ ?", SCHEMA, "^" + table + "_[0-9]+$");
                assertThat(rows).as("partitions of " + table).isNotEmpty();
                for (Map<String, Object> row : rows) {
                    assertThat(((Number) row.get("n_tup_upd")).longValue()).as(row.get("relname") + " updates").isZero();
                    assertThat(((Number) row.get("n_tup_del")).longValue()).as(row.get("relname") + " deletes").isZero();
                    if (table.equals("lease_claim_closure_batches")) {
                        assertThat(((Number) row.get("n_dead_tup")).longValue()).as(row.get("relname") + " n_dead_tup").isZero();
                    }
                }
            }
        }
    }
}
