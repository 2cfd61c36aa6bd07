package dev.riffle.engine.maintenance;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import reactor.core.publisher.Mono;

/** Engines with maintenance off (tests drive each pass), helpers for holding locks, bounded polling. */
final class Fixtures {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private Fixtures() {}

    static Riffle manual(TestDatabase db) {
        return manual(db, b -> {});
    }

    static Riffle manual(TestDatabase db, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(6)
                .maintenance(MaintenanceConfig.builder().enabled(false).build());
        tweak.accept(b);
        return Riffle.start(b.build()).block(TIMEOUT);
    }

    static List<Long> enqueue(Riffle riffle, String queue, int n) {
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            jobs.add(NewJob.builder("test.job").queue(queue).args("{\"i\":" + i + "}").build());
        }
        return riffle.client().enqueueMany(jobs).block(TIMEOUT);
    }

    static List<Job> claim(Riffle riffle, String queue, int n) {
        return riffle.subscribe(queue).take(n).collectList().block(TIMEOUT);
    }

    static QueueConfig deadline(String queue, Duration d) {
        return QueueConfig.withDeadline(queue, d);
    }

    static void await(String what, BooleanSupplier condition) {
        dev.riffle.engine.test.Await.until(what, TIMEOUT, condition);
    }

    static void pause(Duration d) {
        dev.riffle.engine.test.Await.pause(d);
    }

    /** Holds the per-attempt advisory lock in an open transaction, as a completion in flight would. */
    static Connection holdAttemptLock(TestDatabase db, long jobId, long runLease) throws SQLException {
        Connection c = db.openJdbc();
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
            st.execute("SELECT pg_advisory_xact_lock(attempt_lock_key(" + jobId + ", " + runLease + "))");
        }
        return c;
    }

    static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                r.close().block(TIMEOUT);
            }
        }
    }

    /** Open compact claims (claimed, no closure evidence) in the whole receipt plane. */
    static long openClaims(TestDatabase db) {
        return db.queryLong("SELECT count(*) FROM lease_claim_batches b CROSS JOIN LATERAL unnest(b.receipt_ids) r "
                + "WHERE NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches c "
                + "WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> r)");
    }

    /** Receipts with more than one closure: must always be zero. */
    static long doubleClosures(TestDatabase db) {
        return db.queryLong("SELECT count(*) FROM (SELECT r FROM lease_claim_closure_batches c, unnest(c.receipt_ids) r "
                + "GROUP BY r HAVING count(*) > 1) d");
    }
}
