package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RingStatus;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * The vacuum contract: with rotation and prune running, the receipt plane is reclaimed by TRUNCATE, closure
 * partitions never carry dead tuples, and the schema's dead tuples stay bounded — also while another session pins
 * the MVCC horizon for the whole run.
 */
@RiffleTest(claimSlots = 4, queueSlots = 8)
class VacuumContractIT {

    private static final Duration ROTATE = Duration.ofMillis(200);

    private static Riffle maintained(TestDatabase db) {
        return Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(8)
                .maintenance(MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200))
                        .rotationInterval(ROTATE).rotationMinInterval(ROTATE).rotationMaxAge(ROTATE)
                        .claimRotationMaxAge(ROTATE).build())
                .build()).block(Fixtures.TIMEOUT);
    }

    private static void drain(Riffle riffle, String queue, int n) {
        Set<Long> done = ConcurrentHashMap.newKeySet();
        List<Disposable> subs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            subs.add(riffle.subscribe(queue).flatMap(j -> j.complete().thenReturn(j.id()), 64, 1)
                    .subscribe(id -> assertThat(done.add(id)).as("delivered twice: " + id).isTrue()));
        }
        for (int from = 0; from < n; from += 1000) {
            List<NewJob> batch = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                batch.add(NewJob.builder("vac").queue(queue).args("{\"i\":" + i + "}").build());
            }
            riffle.client().enqueueMany(batch).block(Fixtures.TIMEOUT);
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(4).toNanos();
        while (done.size() < n && System.nanoTime() < deadline) {
            Fixtures.pause(Duration.ofMillis(100));
        }
        subs.forEach(Disposable::dispose);
        assertThat(done).hasSize(n);
    }

    /** Waits until prune has reclaimed every claim slot but the current one (rotation keeps moving while busy). */
    private static void awaitReceiptPlaneReclaimed(TestDatabase db) {
        Fixtures.await("receipt plane reclaimed", () -> db.queryLong("SELECT count(*) FROM lease_claim_batches b "
                + "WHERE b.claimed_at < clock_timestamp() - interval '5 seconds'") == 0
                && db.queryLong("SELECT count(*) FROM lease_claim_closure_batches c "
                + "WHERE c.closed_at < clock_timestamp() - interval '5 seconds'") == 0);
    }

    private static long flushedInserts(TestDatabase db, String table) {
        return db.queryLong("SELECT coalesce(sum(n_tup_ins), 0) FROM pg_stat_user_tables WHERE schemaname = ? AND relname ~ ?",
                db.schema(), "^" + table + "_[0-9]+$");
    }

    @Test
    void underAPinnedHorizonJobsCompleteThePlaneIsTruncatedAndClosuresStayClean(TestDatabase db) throws Exception {
        int n = 5_000;
        try (Connection pin = db.openJdbc()) {
            pin.setAutoCommit(false);
            try (Statement st = pin.createStatement()) {
                st.execute("SELECT txid_current()");
            }
            Riffle riffle = maintained(db);
            try {
                drain(riffle, "pinned", n);
                awaitReceiptPlaneReclaimed(db);
                List<RingStatus> status = riffle.maintenance().status().collectList().block(Fixtures.TIMEOUT);
                RingStatus claim = status.stream().filter(s -> s.ring() == Ring.CLAIM).findFirst().orElseThrow();
                assertThat(claim.generation()).as("claim ring rotated").isGreaterThan(4);
            } finally {
                Fixtures.close(riffle);
            }
            assertThat(db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE backend_xid IS NOT NULL "
                    + "AND state LIKE 'idle in transaction%'")).as("the pin is still held").isGreaterThanOrEqualTo(1);
            Fixtures.await("stats flushed", () -> flushedInserts(db, "lease_claim_closure_batches") > 0);
            List<Map<String, Object>> closures = db.queryRows("SELECT relname, n_dead_tup, n_tup_upd, n_tup_del "
                    + "FROM pg_stat_user_tables WHERE schemaname = ? AND relname ~ '^lease_claim_closure_batches_[0-9]+$'", db.schema());
            assertThat(closures).isNotEmpty().allSatisfy(r -> {
                assertThat(((Number) r.get("n_dead_tup")).longValue()).as(r.get("relname") + " dead").isZero();
                assertThat(((Number) r.get("n_tup_upd")).longValue()).as(r.get("relname") + " updates").isZero();
                assertThat(((Number) r.get("n_tup_del")).longValue()).as(r.get("relname") + " deletes").isZero();
            });
            pin.rollback();
        }
    }

    @Test
    void fiftyThousandJobsWithMaintenanceLeaveFewDeadTuples(TestDatabase db) {
        int n = Integer.getInteger("riffle.test.budgetJobs", 50_000);
        Riffle riffle = maintained(db);
        try {
            drain(riffle, "budget", n);
            awaitReceiptPlaneReclaimed(db);
        } finally {
            Fixtures.close(riffle);
        }
        Fixtures.await("stats flushed", () -> flushedInserts(db, "ready_entries") >= n);
        long dead = db.queryLong("SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = ?", db.schema());
        List<Map<String, Object>> worst = db.queryRows("SELECT relname, n_dead_tup FROM pg_stat_user_tables "
                + "WHERE schemaname = ? AND n_dead_tup > 0 ORDER BY n_dead_tup DESC LIMIT 10", db.schema());
        assertThat(dead).as("dead tuples over the schema: " + worst).isLessThan(500);
        assertThat(db.queryLong("SELECT count(*) FROM lease_claim_batches WHERE claimed_at < clock_timestamp() - interval '10 seconds'"))
                .isZero();
    }
}
