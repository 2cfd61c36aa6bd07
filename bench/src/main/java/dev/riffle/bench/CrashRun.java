package dev.riffle.bench;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.RiffleStats;
import dev.riffle.engine.api.DoctorReport;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Crash under load, with rescue running while prune runs (docs/validation, criterion 4). One engine in the harness
 * JVM (the survivor: maintenance leader with fast rescue, claim-ring rotation and prune) and {@code instances} worker
 * JVMs ({@link ProcessFleet}) drain one queue together; once a fraction of the jobs is done, instance 0 gets SIGKILL
 * with claims in hand. Stale rescue closes the dead attempts and routes their jobs to retry while the claim ring keeps
 * rotating and pruning; the run ends when every job has a completed terminal row.
 *
 * <p>Job counts come from the database, not from the harness: the killed JVM may have made completions durable
 * that it never got to report. Completed = distinct job ids with a completed terminal row ({@link #terminalCounts}); a
 * duplicate is a second completed row for one job; lost = enqueued - completed.
 */
final class CrashRun {

    /**
     * The least time a crash run gets, whatever the drain timeout (a smoke run's is 60 s). The run needs a cold child
     * JVM to reach its first claim, the stale window, a rescue tick and then a prune of the claim ring, which backs off
     * up to 2^5 maintenance ticks after each proof the dead claims failed. CI's smoke run once ended with every job
     * completed and 0 slots pruned after the kill; 60 s running out on a loaded 2-core host is the likeliest cause (it
     * did not happen again locally). Only a failing run waits this long.
     */
    static final int MIN_TIMEOUT_SECONDS = 180;

    /** What to run; defaults in {@link Validate}. */
    record Options(int jobs, int instances, int workers, int delayMillis, double killAfter, Duration staleAfter,
                   Duration maintenanceTick, int timeoutSeconds) {
    }

    private final BenchConfig cfg;
    private final Monitor mon;
    private final Options o;

    CrashRun(BenchConfig cfg, Monitor mon, Options o) {
        this.cfg = cfg;
        this.mon = mon;
        this.o = o;
    }

    /** The survivor's maintenance: rescue, claim-ring rotation and prune every tick; queue history kept as usual. */
    private MaintenanceConfig maintenance() {
        Duration t = o.maintenanceTick();
        return MaintenanceConfig.builder().leaderRetry(Duration.ofMillis(200)).rescueInterval(t)
                .staleAfter(o.staleAfter()).heartbeatInterval(o.staleAfter().dividedBy(3)).promotionInterval(Duration.ofMillis(100)).rotationInterval(t)
                .rotationMinInterval(t).claimRotationMaxAge(t).build();
    }

    Map<String, Object> run(Path timelineCsv) throws Exception {
        int n = o.jobs();
        Tracker tr = new Tracker(n);
        RiffleSystem survivor = new RiffleSystem(cfg, "bench_riffle", maintenance());
        ProcessFleet fleet = null;
        List<String> timeline = new ArrayList<>();
        timeline.add("seconds,event,harness_completed,handler_starts,stale_rescued,pruned_slots,db_completed");
        try {
            survivor.reset(mon.connection());
            survivor.open();
            String padding = Payloads.padding(cfg.payloadPad);
            for (long from = 0; from < n; from += cfg.enqueueBatch) {
                long to = Math.min(n, from + cfg.enqueueBatch);
                List<QueueSystem.BenchJob> b = new ArrayList<>();
                long micros = Payloads.epochMicros();
                for (long s = from; s < to; s++) {
                    b.add(new QueueSystem.BenchJob(s, micros, Payloads.args(s, micros, padding)));
                }
                survivor.enqueue(b);
                long now = System.nanoTime();
                for (long s = from; s < to; s++) {
                    tr.committed(s, now);
                }
                tr.enqueued.addAndGet(to - from);
            }
            // The survivor must hold the leader lock before the workers start: the killed JVM must not be the one
            // that would have rescued.
            long leaderDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!survivor.engine().stats().leader()) {
                if (System.nanoTime() > leaderDeadline) {
                    throw new IllegalStateException("the survivor did not become maintenance leader within 60 s");
                }
                LockSupport.parkNanos(50_000_000L);
            }
            // Children: the harness's bench flags, no warm-up (a cold JIT does not matter to a crash).
            List<String> childArgs = new ArrayList<>(cfg.args);
            childArgs.addAll(List.of("--child-warmup-jobs", "0"));
            BenchConfig childCfg = BenchConfig.parse(childArgs.toArray(String[]::new), System.getenv());
            fleet = new ProcessFleet(childCfg, "riffle", o.instances(), o.workers(), o.delayMillis());
            fleet.open();

            long t0 = System.nanoTime();
            RiffleStats st0 = survivor.engine().stats();
            fleet.start(tr);
            long deadline = t0 + TimeUnit.SECONDS.toNanos(o.timeoutSeconds());
            // The victim must be working (claiming, holding jobs) when it is killed. A cold child JVM can take longer
            // to reach its first claim than a warm survivor needs to drain a small run, and a victim that never
            // claimed leaves nothing to rescue (seen in CI: 600 of 600 completed, 0 rescued). So the survivor starts
            // only once the victim has reported handler starts.
            ProcessFleet victim = fleet;
            awaitUntil(() -> victim.startsReported(0) > 0, deadline);
            survivor.startWorkers(o.workers(), Duration.ofMillis(o.delayMillis()), tr);

            long killAt = Math.max(1, (long) Math.floor(n * o.killAfter()));
            awaitUntil(() -> tr.completedUnique.get() >= killAt, deadline);
            long openBeforeKill = openAttempts();
            long completedAtKill = tr.completedUnique.get();
            long tKill = System.nanoTime();
            long killedPid = fleet.killForcibly(0);
            RiffleStats atKill = survivor.engine().stats();
            timeline.add(line(t0, tKill, "sigkill instance 0 (pid " + killedPid + ")", tr, atKill, -1));

            long completedDb = 0;
            long firstRescue = -1;
            long lastRescue = -1;
            long prunedBeforeFirstRescue = -1;
            long prunedAtLastRescue = -1;
            long lastRescued = atKill.staleRescued();
            long tDone = -1;
            while (System.nanoTime() < deadline) {
                LockSupport.parkNanos(200_000_000L);
                long now = System.nanoTime();
                RiffleStats s = survivor.engine().stats();
                completedDb = completedDistinct();
                if (s.staleRescued() > lastRescued) {
                    if (firstRescue < 0) {
                        firstRescue = now;
                        prunedBeforeFirstRescue = s.prunedSlots();
                    }
                    lastRescue = now;
                    prunedAtLastRescue = s.prunedSlots();
                    lastRescued = s.staleRescued();
                }
                timeline.add(line(t0, now, "sample", tr, s, completedDb));
                if (completedDb >= n) {
                    tDone = now;
                    break;
                }
            }
            // Criterion 4 needs a prune after the kill, beside the rescue. At toy sizes the drain can end before
            // the next rotation and prune tick (seen in CI: 600 jobs, 0 slots pruned from kill to done), so the run
            // waits for one, bounded by the run's deadline; the job counts below are taken after it, so they also
            // show that the prune lost nothing.
            long prunedAtDone = survivor.engine().stats().prunedSlots();
            while (tDone > 0 && survivor.engine().stats().prunedSlots() <= atKill.prunedSlots()
                    && System.nanoTime() < deadline) {
                LockSupport.parkNanos(100_000_000L);
            }
            Thread.sleep(cfg.settleMillis);
            RiffleStats end = survivor.engine().stats();
            // How the claim ring stood at the end (the status record as it prints itself): when no prune followed the
            // kill, this says whether rotation was idle, the prune skipped for a proof, or backing off.
            String claimRing = survivor.engine().maintenance().status()
                    .filter(rs -> rs.ring() == dev.riffle.engine.api.Ring.CLAIM).next()
                    .map(String::valueOf).defaultIfEmpty("no claim ring status").block(Duration.ofMinutes(1));
            DoctorReport doctor = survivor.engine().admin().doctor().block(Duration.ofMinutes(1));
            Map<String, Object> fleetCounters = fleet.stop();
            survivor.stopWorkers();
            long[] db = terminalCounts();

            Map<String, Object> m = new LinkedHashMap<>();
            m.put("jobs_enqueued", tr.enqueued.get());
            m.put("jobs_completed", db[0]);
            m.put("completed_rows", db[1]);
            m.put("duplicate_completions", db[1] - db[0]);
            m.put("jobs_lost", tr.enqueued.get() - db[0]);
            m.put("dlq_or_failed", db[2]);
            m.put("harness_completed_reported", tr.completedUnique.get());
            m.put("harness_completed_twice", tr.completedDuplicate.get());
            m.put("completed_on_a_later_attempt", db[3]);
            m.put("completed_at_kill", completedAtKill);
            m.put("open_attempts_before_kill", openBeforeKill);
            m.put("killed_pid", killedPid);
            m.put("stale_rescued", end.staleRescued() - st0.staleRescued());
            m.put("rejected_completions", end.rejected());
            m.put("pruned_slots_total", end.prunedSlots() - st0.prunedSlots());
            m.put("pruned_slots_kill_to_done", prunedAtDone - atKill.prunedSlots());
            m.put("pruned_slots_after_kill", end.prunedSlots() - atKill.prunedSlots());
            m.put("claim_ring_at_end", claimRing);
            m.put("pruned_slots_while_rescuing", prunedAtLastRescue < 0 ? 0 : prunedAtLastRescue
                    - prunedBeforeFirstRescue);
            m.put("first_rescue_after_kill_s", firstRescue < 0 ? null : (firstRescue - tKill) / 1e9);
            m.put("last_rescue_after_kill_s", lastRescue < 0 ? null : (lastRescue - tKill) / 1e9);
            m.put("recovered", tDone > 0);
            m.put("recovery_seconds", tDone > 0 ? (tDone - tKill) / 1e9 : null);
            m.put("run_seconds", ((tDone > 0 ? tDone : System.nanoTime()) - t0) / 1e9);
            m.put("doctor_ok", doctor != null && doctor.ok());
            m.put("doctor_violations", doctor == null ? List.of("no report")
                    : doctor.violations().stream().map(String::valueOf).limit(10).toList());
            m.put("errors", tr.errors.get());
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("params", Map.of("jobs", n, "instances", o.instances() + " worker JVMs + 1 survivor in the harness",
                    "workers_per_instance", o.workers(), "delay_ms", o.delayMillis(), "kill_after", o.killAfter(),
                    "stale_after_ms", o.staleAfter().toMillis(), "maintenance_tick_ms", o.maintenanceTick().toMillis()));
            r.put("metrics", m);
            r.put("fleet_counters", fleetCounters);
            Throwable first = tr.firstError.get();
            if (first != null) {
                r.put("first_error", first.toString());
            }
            return r;
        } finally {
            if (fleet != null) {
                fleet.close();
            }
            survivor.close();
            writeTimeline(timelineCsv, timeline);
        }
    }

    /** Polls {@code condition} every 2 ms until it holds or {@code deadline} (System.nanoTime) passes. */
    private static void awaitUntil(java.util.function.BooleanSupplier condition, long deadline) {
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(2_000_000L);
        }
    }

    private static String line(long t0, long now, String event, Tracker tr, RiffleStats s, long dbCompleted) {
        return String.format(Locale.ROOT, "%.3f,%s,%d,%d,%d,%d,%s", (now - t0) / 1e9, event,
                tr.completedUnique.get(), tr.startsTotal.get(), s.staleRescued(), s.prunedSlots(),
                dbCompleted < 0 ? "" : Long.toString(dbCompleted));
    }

    private static void writeTimeline(Path csv, List<String> lines) throws IOException {
        if (csv != null) {
            Files.write(csv, lines);
        }
    }

    /** Open attempts in the claim ring: receipts without a closure (every engine's). */
    private long openAttempts() throws SQLException {
        return queryLong("SELECT count(*) FROM bench_riffle.lease_claim_batches b"
                + " CROSS JOIN LATERAL unnest(b.receipt_ids) r WHERE NOT EXISTS (SELECT 1 FROM"
                + " bench_riffle.lease_claim_closure_batches c WHERE c.claim_slot = b.claim_slot"
                + " AND c.receipt_ranges @> r)");
    }

    private long completedDistinct() throws SQLException {
        return terminalCounts()[0];
    }

    /**
     * Distinct completed jobs, completed rows, jobs that ended failed or in the DLQ, and completions by a later
     * attempt (run lease above 1: the job ran again after rescue). Counted on the tables under the
     * {@code terminal_jobs} view (compact completion batches and narrow terminal rows), without the view's join to
     * the ready rows, which made one count take seconds and the polling loop blind meanwhile.
     */
    private long[] terminalCounts() throws SQLException {
        mon.statements++;
        try (PreparedStatement ps = mon.connection().prepareStatement("WITH c AS ("
                + " SELECT u.job_id, u.run_lease FROM bench_riffle.receipt_completion_batches b"
                + " CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases) AS u(job_id, run_lease) WHERE b.queue = ?"
                + " UNION ALL SELECT job_id, run_lease FROM bench_riffle.done_entries"
                + " WHERE queue = ? AND state = 'completed')"
                + " SELECT count(DISTINCT job_id), count(*), (SELECT count(*) FROM bench_riffle.dlq_entries)"
                + " + (SELECT count(*) FROM bench_riffle.done_entries WHERE queue = ? AND state <> 'completed'),"
                + " count(*) FILTER (WHERE run_lease > 1) FROM c")) {
            ps.setString(1, RiffleSystem.QUEUE);
            ps.setString(2, RiffleSystem.QUEUE);
            ps.setString(3, RiffleSystem.QUEUE);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)};
            }
        }
    }

    private long queryLong(String sql) throws SQLException {
        mon.statements++;
        try (PreparedStatement ps = mon.connection().prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
