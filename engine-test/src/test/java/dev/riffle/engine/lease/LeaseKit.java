package dev.riffle.engine.lease;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Engines with maintenance off (tests drive each pass), bounded polling, and the receipt-plane queries the lease
 * tests share. Every count is scoped to one job or one queue, because the tests of a class share a schema.
 */
final class LeaseKit {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    /** Heartbeats so rare that no evidence is written during a test: staleness comes from claim/lease times only. */
    static final MaintenanceConfig NO_BEATS = MaintenanceConfig.builder().enabled(false)
            .heartbeatInterval(Duration.ofMinutes(10)).staleAfter(Duration.ofMinutes(30)).build();

    private LeaseKit() {}

    static Riffle manual(TestDatabase db, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(6)
                .maintenance(NO_BEATS);
        tweak.accept(b);
        return Riffle.start(b.build()).block(TIMEOUT);
    }

    static List<Long> enqueue(Riffle riffle, String queue, int n) {
        return enqueue(riffle, queue, n, 5);
    }

    static List<Long> enqueue(Riffle riffle, String queue, int n, int maxAttempts) {
        List<NewJob> jobs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            jobs.add(NewJob.builder("lease.job").queue(queue).args("{\"i\":" + i + "}").maxAttempts(maxAttempts).build());
        }
        return riffle.client().enqueueMany(jobs).block(TIMEOUT);
    }

    static List<Job> claim(Riffle riffle, String queue, int n) {
        return riffle.subscribe(queue).take(n).collectList().block(TIMEOUT);
    }

    /**
     * Polls {@code condition} every 50 ms for up to {@link #TIMEOUT}. Sleeps on the calling (test) thread rather than
     * on a Reactor timer, so a wedged scheduler fails the test with a timeout instead of hanging the run.
     */
    static void await(String what, BooleanSupplier condition) {
        dev.riffle.engine.test.Await.until(what, TIMEOUT, condition);
    }

    /** Lets time pass on the test thread (not a Reactor timer; see {@link #await}). */
    static void pause(Duration d) {
        dev.riffle.engine.test.Await.pause(d);
    }

    static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                try {
                    r.close().block(TIMEOUT);
                } catch (RuntimeException e) {
                    // A failed close must not hide the assertion that failed the test.
                }
            }
        }
    }

    /** Row-local claims of one attempt. */
    static long rowLocalClaims(TestDatabase db, long jobId, long runLease) {
        return db.queryLong("SELECT count(*) FROM lease_claims WHERE job_id = ? AND run_lease = ?", jobId, runLease);
    }

    /** Explicit closures of one attempt, any outcome. */
    static long explicitClosures(TestDatabase db, long jobId, long runLease) {
        return db.queryLong("SELECT count(*) FROM lease_claim_closures WHERE job_id = ? AND run_lease = ?", jobId, runLease);
    }

    /** Explicit closures of one attempt with {@code outcome}. */
    static long explicitClosures(TestDatabase db, long jobId, long runLease, String outcome) {
        return db.queryLong("SELECT count(*) FROM lease_claim_closures WHERE job_id = ? AND run_lease = ? AND outcome = ?",
                jobId, runLease, outcome);
    }

    /** Compact claim items (lease_claim_batches members) of one attempt. */
    static long compactClaims(TestDatabase db, long jobId, long runLease) {
        return db.queryLong("SELECT count(*) FROM lease_claim_batches b "
                + "CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases) AS i(jid, rl) WHERE i.jid = ? AND i.rl = ?",
                jobId, runLease);
    }

    /** Closure-batch memberships of one attempt's receipt (compact or row-local receipt id), any outcome. */
    static long batchClosures(TestDatabase db, long jobId, long runLease) {
        return db.queryLong("SELECT count(*) FROM lease_claim_closure_batches c JOIN ("
                + "  SELECT b.claim_slot, i.rid FROM lease_claim_batches b "
                + "  CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) AS i(jid, rl, rid) "
                + "  WHERE i.jid = ? AND i.rl = ? "
                + "  UNION ALL SELECT l.claim_slot, l.receipt_id FROM lease_claims l WHERE l.job_id = ? AND l.run_lease = ?"
                + ") r ON c.claim_slot = r.claim_slot AND c.receipt_ranges @> r.rid", jobId, runLease, jobId, runLease);
    }

    /** Closure-batch memberships of one attempt's compact receipt with {@code outcome}. */
    static long batchClosures(TestDatabase db, long jobId, long runLease, String outcome) {
        return db.queryLong("SELECT count(*) FROM lease_claim_closure_batches c JOIN lease_claim_batches b "
                + "ON b.claim_slot = c.claim_slot CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) AS i(jid, rl, rid) "
                + "WHERE i.jid = ? AND i.rl = ? AND c.receipt_ranges @> i.rid AND c.outcome = ?", jobId, runLease, outcome);
    }

    /** Live leases of one attempt. */
    static long leases(TestDatabase db, long jobId, long runLease) {
        return db.queryLong("SELECT count(*) FROM leases WHERE job_id = ? AND run_lease = ?", jobId, runLease);
    }

    /** The state of the attempt's lease, or null when it has none. */
    static @Nullable String leaseState(TestDatabase db, long jobId, long runLease) {
        List<Map<String, @Nullable Object>> rows = db.queryRows(
                "SELECT state::text AS state FROM leases WHERE job_id = ? AND run_lease = ?", jobId, runLease);
        return rows.isEmpty() ? null : (String) rows.get(0).get("state");
    }

    /** Claim slots whose count proof fails (claims != closures). Must be zero once every attempt has closed. */
    static long unbalancedSlots(TestDatabase db) {
        return db.queryLong("SELECT count(*) FROM claim_ring_slots WHERE NOT claim_slot_balanced(slot)");
    }

    /** Terminal history rows of a job. */
    static long terminal(TestDatabase db, long jobId, String state) {
        return db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state::text = ?", jobId, state);
    }

    /** Terminal history rows of a job, any state. */
    static long terminal(TestDatabase db, long jobId) {
        return db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ?", jobId);
    }

    /** Makes a deferred (retryable/scheduled) row due now and promotes it; returns the number promoted. */
    static int makeDueAndPromote(TestDatabase db, Riffle riffle, long jobId) {
        db.execute("UPDATE deferred_jobs SET run_at = now() WHERE job_id = ?", jobId);
        Integer n = riffle.maintenance().promoteNow().block(TIMEOUT);
        return n == null ? 0 : n;
    }

    /** JSON object text without insignificant whitespace, so {@code {"ok": 1}} and {@code {"ok":1}} compare equal. */
    static String compact(String json) {
        return json.replaceAll("\\s+", "");
    }
}
