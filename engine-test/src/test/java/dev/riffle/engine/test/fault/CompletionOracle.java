package dev.riffle.engine.test.fault;

import dev.riffle.engine.DatabaseUrl;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The common oracle of RELIABILITY.md §2, read from the database alone: after a drain, every committed job of a
 * queue has exactly one terminal row, every receipt has at most one closure, no closure is an orphan, and no
 * attempt is still open. When something is missing it says where the job is stuck, so a failing fault test
 * names the loss mode instead of timing out.
 *
 * <p>"Committed jobs" are the distinct job ids in the queue's {@code ready_entries}: a job whose enqueue commit
 * was in doubt counts exactly when it did commit. The oracle reads the live ring, so it is exact only while no
 * slot holding the test's history has been pruned: run engines with a slow rotation interval (the report flags
 * a ring that wrapped). Scheduled jobs that were never promoted are not counted. Blocking JDBC; call it from the
 * test thread.
 */
public final class CompletionOracle {

    private static final int SHOWN = 20;

    private CompletionOracle() {}

    /**
     * An attempt that was claimed (a compact claim batch item or a row-local claim) and has no closure evidence.
     *
     * @param jobId the job
     * @param runLease the attempt's run lease
     * @param receiptId its receipt id (-1 for a row-local claim)
     * @param claimSlot claim ring slot
     * @param batchId claim batch id (-1 for a row-local claim)
     * @param claimedAt claim time (database clock)
     */
    public record OpenAttempt(long jobId, long runLease, long receiptId, int claimSlot, long batchId, Instant claimedAt) {}

    /**
     * What the oracle found.
     *
     * @param queue the queue checked
     * @param committed distinct job ids committed to the queue
     * @param acknowledgedNotCommitted ids an enqueue call returned that are not in the database (a lost enqueue)
     * @param notTerminal committed jobs with no terminal row
     * @param duplicateTerminal jobs with more than one terminal row, with their row count
     * @param openAttempts claimed attempts of the queue without closure evidence
     * @param receiptsClosedTwice receipt ids (of the whole schema) that appear in more than one closure batch
     * @param orphanClosures closure receipts (of the whole schema) with no claim in the same claim slot (I9)
     * @param closedCount {@code sum(closed_count)} over every compact closure batch of the schema
     * @param completedClosures the part of {@code closedCount} with outcome {@code completed}
     * @param ringsWrapped the queue or claim ring has rotated far enough that prune may have truncated history,
     *     which makes this report incomplete (jobs look lost, closures look missing)
     */
    public record Report(String queue, Set<Long> committed, Set<Long> acknowledgedNotCommitted, Set<Long> notTerminal,
                         Map<Long, Long> duplicateTerminal, List<OpenAttempt> openAttempts,
                         List<Long> receiptsClosedTwice, long orphanClosures, long closedCount, long completedClosures,
                         boolean ringsWrapped) {

        /** Jobs that are neither terminal nor held by an open attempt: no claim is even pending for them. */
        public Set<Long> notTerminalAndUnclaimed() {
            Set<Long> held = openAttempts.stream().map(OpenAttempt::jobId).collect(Collectors.toSet());
            Set<Long> s = new TreeSet<>(notTerminal);
            s.removeAll(held);
            return s;
        }

        /** Jobs with more than one open attempt at once (I2). */
        public Set<Long> jobsWithSeveralOpenAttempts() {
            Map<Long, Long> perJob = openAttempts.stream()
                    .collect(Collectors.groupingBy(OpenAttempt::jobId, Collectors.counting()));
            return perJob.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey)
                    .collect(Collectors.toCollection(TreeSet::new));
        }

        /** Terminal jobs that still have an open attempt (I4). */
        public Set<Long> terminalWithOpenAttempt() {
            return openAttempts.stream().map(OpenAttempt::jobId)
                    .filter(id -> committed.contains(id) && !notTerminal.contains(id))
                    .collect(Collectors.toCollection(TreeSet::new));
        }

        /** True when every committed job is terminal exactly once and the closure ledger is clean. */
        public boolean exactlyOnce() {
            return acknowledgedNotCommitted.isEmpty() && notTerminal.isEmpty() && duplicateTerminal.isEmpty()
                    && receiptsClosedTwice.isEmpty() && orphanClosures == 0 && openAttempts.isEmpty();
        }

        /**
         * Throws an {@link AssertionError} carrying {@link #describe()} unless {@link #exactlyOnce()}.
         */
        public Report assertExactlyOnce() {
            if (!exactlyOnce()) {
                throw new AssertionError(describe());
            }
            return this;
        }

        /** A multi-line account of every violation, with up to 20 example ids per kind. */
        public String describe() {
            StringBuilder sb = new StringBuilder("completion oracle for queue '" + queue + "': " + committed.size()
                    + " committed jobs, closed_count sum " + closedCount + " (" + completedClosures + " completed)");
            if (exactlyOnce()) {
                return sb.append(": every job terminal exactly once, ledger clean").toString();
            }
            if (ringsWrapped) {
                sb.append("\n- WARNING: a ring wrapped, so prune may have truncated terminal history and closures; "
                        + "slow rotation down for tests that use this oracle");
            }
            section(sb, "enqueue acknowledged but not in the database (LOST ENQUEUE)", acknowledgedNotCommitted);
            section(sb, "not terminal (LOST or still pending)", notTerminal);
            section(sb, "  ... of which have no open attempt either (never claimed, or the claim was lost; cursor?)",
                    notTerminalAndUnclaimed());
            if (!openAttempts.isEmpty()) {
                sb.append("\n- open attempts (claimed, never closed; only rescue would close them): ").append(openAttempts.size());
                openAttempts.stream().limit(SHOWN).forEach(a -> sb.append("\n    ").append(a));
            }
            section(sb, "jobs with several open attempts (I2)", jobsWithSeveralOpenAttempts());
            section(sb, "terminal jobs with an open attempt (I4)", terminalWithOpenAttempt());
            if (!duplicateTerminal.isEmpty()) {
                sb.append("\n- jobs with several terminal rows (DUPLICATE-ACCEPTED): ").append(duplicateTerminal.size())
                        .append(' ').append(duplicateTerminal.entrySet().stream().limit(SHOWN).toList());
            }
            section(sb, "receipts closed twice (I3)", new LinkedHashSet<>(receiptsClosedTwice));
            if (orphanClosures > 0) {
                sb.append("\n- orphan closure receipts (I9): ").append(orphanClosures);
            }
            return sb.toString();
        }

        private static void section(StringBuilder sb, String title, Collection<Long> ids) {
            if (!ids.isEmpty()) {
                sb.append("\n- ").append(title).append(": ").append(ids.size()).append(' ')
                        .append(ids.stream().limit(SHOWN).toList()).append(ids.size() > SHOWN ? " ..." : "");
            }
        }
    }

    /** Reads the report now. {@code acknowledgedIds} are the ids enqueue calls returned (may be empty). */
    public static Report check(DatabaseUrl url, String schema, String queue, Collection<Long> acknowledgedIds) {
        try (Connection c = PgFaults.connect(url)) {
            try (Statement st = c.createStatement()) {
                st.execute("SET search_path TO \"" + schema.replace("\"", "\"\"") + "\"");
                // Freshly filled partitions have no statistics yet; the planner then takes them for nearly empty and
                // joins terminal_jobs' batches to ready_entries with a nested loop, quadratic in the job count
                // (13 s for 3,000 jobs here). Autovacuum would analyze them eventually; the oracle cannot wait.
                st.execute("ANALYZE ready_entries, done_entries, receipt_completion_batches, lease_claim_batches, "
                        + "lease_claim_closure_batches");
            }
            Set<Long> committed = new TreeSet<>(longs(c, "SELECT DISTINCT job_id FROM ready_entries WHERE queue = ?", queue));
            Set<Long> lost = new TreeSet<>(acknowledgedIds);
            lost.removeAll(committed);

            Map<Long, Long> terminalRows = new LinkedHashMap<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT job_id, count(*) FROM terminal_jobs WHERE queue = ? GROUP BY job_id")) {
                ps.setString(1, queue);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        terminalRows.put(rs.getLong(1), rs.getLong(2));
                    }
                }
            }
            Set<Long> notTerminal = new TreeSet<>(committed);
            notTerminal.removeAll(terminalRows.keySet());
            Map<Long, Long> duplicates = new LinkedHashMap<>();
            terminalRows.forEach((id, n) -> {
                if (n > 1) {
                    duplicates.put(id, n);
                }
            });

            List<OpenAttempt> open = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT i.job_id, i.run_lease, i.receipt_id, b.claim_slot, b.batch_id, b.claimed_at "
                            + "FROM lease_claim_batches b "
                            + "CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) AS i(job_id, run_lease, receipt_id) "
                            + "WHERE b.queue = ? AND NOT EXISTS (SELECT 1 FROM lease_claim_closure_batches cb "
                            + "WHERE cb.claim_slot = b.claim_slot AND cb.receipt_ranges @> i.receipt_id) "
                            + "UNION ALL "
                            + "SELECT l.job_id, l.run_lease, -1, l.claim_slot, -1, l.claimed_at FROM lease_claims l "
                            + "WHERE l.queue = ? AND l.closed_at IS NULL AND NOT EXISTS (SELECT 1 FROM lease_claim_closures lc "
                            + "WHERE lc.claim_slot = l.claim_slot AND lc.job_id = l.job_id AND lc.run_lease = l.run_lease) "
                            + "ORDER BY 1, 2")) {
                ps.setString(1, queue);
                ps.setString(2, queue);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        open.add(new OpenAttempt(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getInt(4), rs.getLong(5),
                                rs.getTimestamp(6).toInstant()));
                    }
                }
            }
            List<Long> closedTwice = longs(c, "SELECT r.rid FROM lease_claim_closure_batches cb "
                    + "CROSS JOIN LATERAL unnest(cb.receipt_ids) AS r(rid) GROUP BY cb.claim_slot, r.rid HAVING count(*) > 1 "
                    + "ORDER BY 1");
            long orphans = single(c, "SELECT count(*) FROM lease_claim_closure_batches cb "
                    + "CROSS JOIN LATERAL unnest(cb.receipt_ids) AS r(rid) WHERE NOT EXISTS (SELECT 1 FROM lease_claim_batches b "
                    + "WHERE b.claim_slot = cb.claim_slot AND b.receipt_ranges @> r.rid)");
            long closed = single(c, "SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches");
            long completed = single(c, "SELECT coalesce(sum(closed_count), 0) FROM lease_claim_closure_batches WHERE outcome = 'completed'");
            boolean wrapped = single(c, "SELECT ((SELECT max(generation) FROM queue_ring_rotations) "
                    + ">= (SELECT slot_count FROM queue_ring_state) - 1 OR (SELECT max(generation) FROM claim_ring_rotations) "
                    + ">= (SELECT slot_count FROM claim_ring_state) - 1)::int") == 1;
            return new Report(queue, committed, lost, notTerminal, duplicates, open, closedTwice, orphans, closed, completed,
                    wrapped);
        } catch (SQLException e) {
            throw new PgFaults.FaultException("reading the completion oracle for queue " + queue, e);
        }
    }

    /**
     * Polls (every 100 ms) until every committed job of {@code queue} is terminal and at least
     * {@code minCommitted} jobs are committed, or until {@code timeout}; then returns the full report either way.
     * A drain that stalls (a lost claim, a completion that was never retried) therefore ends in a report naming
     * the stuck jobs rather than in a hang.
     */
    public static Report awaitDrained(DatabaseUrl url, String schema, String queue, Collection<Long> acknowledgedIds,
                                      int minCommitted, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (pendingCount(url, schema, queue, minCommitted) == 0) {
                break;
            }
            sleep(100);
        }
        return check(url, schema, queue, acknowledgedIds);
    }

    /**
     * Committed jobs of {@code queue} without a terminal row (or {@code minCommitted} minus the committed count,
     * when fewer are committed). One cheap statement, for progress polling.
     */
    public static long pendingCount(DatabaseUrl url, String schema, String queue, int minCommitted) {
        try (Connection c = PgFaults.connect(url)) {
            try (Statement st = c.createStatement()) {
                st.execute("SET search_path TO \"" + schema.replace("\"", "\"\"") + "\"");
            }
            // Reads the tables behind terminal_jobs directly: the view's join to ready_entries is what gets slow on
            // unanalyzed partitions, and a progress poll does not need the hydrated rows.
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT (SELECT count(DISTINCT job_id) FROM ready_entries WHERE queue = ?), "
                            + "(SELECT count(*) FROM (SELECT j FROM receipt_completion_batches b CROSS JOIN LATERAL "
                            + "unnest(b.job_ids) AS j WHERE b.queue = ? UNION SELECT job_id FROM done_entries WHERE queue = ?) t)")) {
                ps.setString(1, queue);
                ps.setString(2, queue);
                ps.setString(3, queue);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long committed = rs.getLong(1);
                    long terminal = rs.getLong(2);
                    return Math.max(committed - terminal, minCommitted - committed);
                }
            }
        } catch (SQLException e) {
            throw new PgFaults.FaultException("counting pending jobs of queue " + queue, e);
        }
    }

    private static List<Long> longs(Connection c, String sql, String... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setString(i + 1, params[i]);
            }
            List<Long> out = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
            return out;
        }
    }

    private static long single(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a drain", e);
        }
    }
}
