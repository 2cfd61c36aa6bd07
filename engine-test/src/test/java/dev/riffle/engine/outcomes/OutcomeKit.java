package dev.riffle.engine.outcomes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.NewJob;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Engine start-up and database probes shared by the outcome tests. Everything here blocks, so it is called from
 * JUnit threads only, never from inside a handler or a reactive pipeline; every wait is bounded.
 */
final class OutcomeKit {
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private OutcomeKit() {}

    /**
     * An engine whose maintenance loops are off: promotion and DLQ retention run only when a test calls
     * {@code promoteNow()} / {@code cleanupDlqNow()}, so what is promoted when is the test's decision.
     */
    static Riffle start(Probe db) {
        return start(db, b -> {});
    }

    static Riffle start(Probe db, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(6)
                .maintenance(manualMaintenance().build());
        tweak.accept(b);
        Riffle riffle = Riffle.start(b.build()).block(TIMEOUT);
        // Cancel signals and wake-ups arrive over LISTEN; a test that relies on them must not race its setup.
        await("LISTEN connection up", () -> riffle.stats().listening());
        return riffle;
    }

    static MaintenanceConfig.Builder manualMaintenance() {
        return MaintenanceConfig.builder().enabled(false);
    }

    static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                r.close().block(TIMEOUT);
            }
        }
    }

    static long enqueue(Riffle riffle, NewJob job) {
        return riffle.client().enqueue(job).block(TIMEOUT);
    }

    static void await(String what, BooleanSupplier condition) {
        await(what, TIMEOUT, condition);
    }

    static void await(String what, Duration timeout, BooleanSupplier condition) {
        dev.riffle.engine.test.Await.until(what, timeout, condition);
    }

    /** Polls {@code sql} (one number) until it equals {@code expected}; fails with the last value otherwise. */
    static void awaitCount(Probe db, long expected, String sql, Object... params) {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        long last;
        while ((last = db.queryLong(sql, params)) != expected) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + expected + " but was " + last + ": " + sql);
            }
            pause(Duration.ofMillis(25));
        }
    }

    static void pause(Duration d) {
        dev.riffle.engine.test.Await.pause(d);
    }

    /** The receipt id the claim of attempt {@code (jobId, runLease)} was given. */
    static long receiptOf(Probe db, long jobId, long runLease) {
        return db.queryLong("SELECT b.receipt_ids[i] FROM lease_claim_batches b, generate_subscripts(b.job_ids, 1) i "
                + "WHERE b.job_ids[i] = ? AND b.run_leases[i] = ?", jobId, runLease);
    }

    /** Closure rows (over every closure table shape) that cover the receipt of attempt {@code (jobId, runLease)}. */
    static long closuresOf(Probe db, long jobId, long runLease) {
        long receipt = receiptOf(db, jobId, runLease);
        return db.queryLong("SELECT count(*) FROM lease_claim_closure_batches WHERE receipt_ranges @> ?::bigint", receipt)
                + db.queryLong("SELECT count(*) FROM lease_claim_closures WHERE job_id = ? AND run_lease = ?", jobId, runLease);
    }

    /** How many claims (attempts) the job has had. */
    static long claimsOf(Probe db, long jobId) {
        return db.queryLong("SELECT count(*) FROM lease_claim_batches b, unnest(b.job_ids) j WHERE j = ?", jobId);
    }

    /**
     * Makes a deferred job due now. deferred_jobs is a mutable backlog table, so this stands in for waiting out a
     * backoff after the backoff itself has been checked from the stored timestamps.
     */
    static void makeDue(Probe db, long jobId) {
        assertThat(db.execute("UPDATE deferred_jobs SET run_at = now() WHERE job_id = ?", jobId))
                .as("deferred row of job %d", jobId).isEqualTo(1);
    }

    static int promote(Riffle riffle) {
        Integer n = riffle.maintenance().promoteNow().block(TIMEOUT);
        return n == null ? 0 : n;
    }

    /**
     * Seconds between the deferred row's run_at and the closure of the attempt that produced it. Both come from
     * the database clock in the same statement, so this is the delay the engine chose, free of test timing.
     */
    static double delaySeconds(Probe db, long jobId, long runLease) {
        long receipt = receiptOf(db, jobId, runLease);
        List<Map<String, Object>> rows = db.queryRows("SELECT extract(epoch FROM d.run_at - c.closed_at) AS s "
                + "FROM deferred_jobs d JOIN lease_claim_closure_batches c ON c.receipt_ranges @> ?::bigint "
                + "WHERE d.job_id = ?", receipt, jobId);
        assertThat(rows).as("one deferred row and one closure for job %d attempt %d", jobId, runLease).hasSize(1);
        return ((Number) rows.get(0).get("s")).doubleValue();
    }

    static Map<String, Object> row(Probe db, String sql, Object... params) {
        List<Map<String, Object>> rows = db.queryRows(sql, params);
        assertThat(rows).as(sql).hasSize(1);
        return rows.get(0);
    }

    static long asLong(Object value) {
        return ((Number) value).longValue();
    }

    /**
     * Opens a transaction on {@code c} that holds the attempt's advisory lock (the one every closer of the attempt
     * takes first) until the test commits or rolls it back: closers then queue on it in arrival order.
     */
    static void holdAttemptLock(java.sql.Connection c, long jobId, long runLease) throws java.sql.SQLException {
        c.setAutoCommit(false);
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(attempt_lock_key(?, ?))")) {
            ps.setLong(1, jobId);
            ps.setLong(2, runLease);
            ps.execute();
        }
    }

    /** Enqueues one immediate job in the caller's (open) transaction through the SQL entry point producers use. */
    static long enqueueIn(java.sql.Connection producer, String queue) throws java.sql.SQLException {
        try (java.sql.PreparedStatement ps = producer.prepareStatement("SELECT j FROM enqueue_jobs(ARRAY[?]::text[], "
                + "ARRAY['k']::text[], ARRAY['{}'::jsonb], ARRAY[?]::smallint[], ARRAY[25]::smallint[], "
                + "ARRAY[NULL]::timestamptz[]) AS j")) {
            ps.setString(1, queue);
            ps.setInt(2, dev.riffle.engine.api.NewJob.DEFAULT_PRIORITY);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getLong(1);
            }
        }
    }
}
