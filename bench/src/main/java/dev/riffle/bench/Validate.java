package dev.riffle.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reruns the receipt-plane design's four success criteria (docs/validation/README.md) with the bench's own
 * machinery and writes raw numbers, a PNG and a verdict into {@code <out>/<timestamp>/}:
 *
 * <ol>
 *   <li>no mutable frontier table: no relation named like one, and after each of Riffle's runs (claim + complete)
 *       no table UPDATEd or DELETEd at a rate that scales with jobs, and none at all on the ring's append-only
 *       partitions; the baseline's runs go through the same check as a control, which must find its job table;</li>
 *   <li>soak: a fixed-rate steady load for {@code --soak-minutes}, dead tuples sampled every
 *       {@code --sample-seconds} across the schema and on the closure partitions, for Riffle and then the baseline;</li>
 *   <li>throughput of the {@code 1x32}, {@code 4x8} and soak profiles, Riffle and the baseline side by side;</li>
 *   <li>crash under load ({@link CrashRun}): SIGKILL to a worker JVM holding claims, rescue while prune runs, job
 *       counts from the database.</li>
 * </ol>
 *
 * Flags of its own are listed by {@code --help}; every other flag goes to the bench ({@link BenchConfig}), after
 * the validation's defaults for it ({@link #BENCH_DEFAULTS}).
 */
public final class Validate {

    /** The bench settings the validation starts from; the command line can override each. */
    static final List<String> BENCH_DEFAULTS = List.of("--scenarios", "none", "--profiles", "1x32,4x8",
            "--delays-ms", "1", "--profile-jobs", "20000", "--child-warmup-jobs", "5000", "--warmup-jobs", "20000");

    /** With {@code --smoke}: toy sizes, no warm-up (the smoke test; measures nothing). */
    static final List<String> SMOKE_BENCH_DEFAULTS = List.of("--scenarios", "none", "--profiles", "1x32,4x8",
            "--delays-ms", "1", "--profile-jobs", "200");

    /** Tables of the rings' append-only class (DESIGN.md §2.1): any UPDATE or DELETE on them fails criterion 1. */
    static final String APPEND_ONLY_PARTITIONS = "^(ready_entries|ready_segments|ready_tombstones"
            + "|ready_claim_attempt_batches|done_entries|receipt_completion_batches|receipt_completion_tombstones"
            + "|queue_terminal_count_deltas|lease_claim_batches|lease_claim_closure_batches|lease_claim_closures)"
            + "_[0-9]+$";

    /** A relation named like a claim frontier: the reference system's {@code open_receipt_claims} and kin. */
    static final String FRONTIER_NAMES = "(^open_|frontier)";

    /**
     * UPDATEs + DELETEs per job at or above which a table counts as mutated by the hot path (criterion 1). A table
     * touched by maintenance only (ring state, rotation ledgers) stays far below it on any run of a few thousand jobs.
     */
    static final double MUTATIONS_PER_JOB_LIMIT = 0.01;

    private Validate() {
    }

    /** Options of the validation itself (everything else is the bench's). */
    static final class Options {
        double soakMinutes = 10;
        int soakSeconds;
        double sampleSeconds = 5;
        double soakRate = 1000;
        List<String> soakSystems = List.of("riffle", "baseline");
        long deadLimit = 500;
        double minThroughputRatio = 0.5;
        double keepUp = 0.98;
        int crashJobs = 20_000;
        int crashInstances = 2;
        int crashWorkers = 16;
        int crashDelayMillis = 2;
        double killAfter = 0.3;
        int staleAfterMillis = 3000;
        int maintenanceTickMillis = 300;
        Path out = Path.of("docs", "validation", "results");
        List<String> benchArgs = new ArrayList<>();

        int soakSecondsEffective() {
            return soakSeconds > 0 ? soakSeconds : (int) Math.max(1, Math.round(soakMinutes * 60));
        }

        static String usage() {
            return String.join("\n",
                    "Usage: docs/validation/run [options] [bench options]",
                    "  --soak-minutes M          soak duration per system (default 10)",
                    "  --soak-seconds S          soak duration in seconds (overrides --soak-minutes; for smoke runs)",
                    "  --sample-seconds S        dead-tuple sampling interval (default 5)",
                    "  --soak-rate R             soak producer rate, jobs/s, both systems (default 1000)",
                    "  --soak-systems LIST       riffle,baseline (default) or riffle",
                    "  --dead-limit N            max steady dead tuples across Riffle's schema (default 500)",
                    "  --min-throughput-ratio F  riffle/baseline completed jobs/s on 1x32 and 4x8 (default 0.5)",
                    "  --crash-jobs N            jobs in the crash run (default 20000)",
                    "  --crash-instances N       worker JVMs in the crash run, besides the survivor (default 2)",
                    "  --crash-workers W         handlers per crash instance (default 16)",
                    "  --crash-delay-ms D        crash handlers' non-blocking delay (default 2)",
                    "  --kill-after F            SIGKILL instance 0 once this fraction of jobs completed (default 0.3)",
                    "  --stale-after-ms N        the survivor's staleAfter (default 3000)",
                    "  --maintenance-tick-ms N   the survivor's rescue/rotation/prune interval (default 300)",
                    "  --out DIR                 results go to DIR/<timestamp>/ (default docs/validation/results)",
                    "  --help",
                    "Bench options (defaults here: " + String.join(" ", BENCH_DEFAULTS) + "), e.g. --database,",
                    "--profile-jobs, --fleet jvm, --delays-ms 0,1, --child-warmup-jobs; see the bench's --help.");
        }

        static Options parse(String[] args) {
            Options o = new Options();
            List<String> a = Arrays.asList(args);
            for (int i = 0; i < a.size(); i++) {
                String[] kv = BenchConfig.splitFlag(a.get(i));
                String k = kv[0];
                String v = kv[1];
                if (k.equals("--help") || k.equals("-h")) {
                    throw new BenchConfig.UsageException(usage());
                }
                if (!OWN.contains(k)) {
                    o.benchArgs.add(a.get(i));
                    continue;
                }
                if (v == null) {
                    if (i + 1 >= a.size()) {
                        throw new BenchConfig.UsageException("missing value for " + k);
                    }
                    v = a.get(++i);
                }
                try {
                    o.set(k, v);
                } catch (NumberFormatException e) {
                    throw new BenchConfig.UsageException("bad number for " + k + ": " + v);
                }
            }
            // the bench's --smoke sets toy sizes; the validation's full-size defaults must not undo them
            o.benchArgs.addAll(0, o.benchArgs.contains("--smoke") ? SMOKE_BENCH_DEFAULTS : BENCH_DEFAULTS);
            if (o.soakMinutes <= 0 || o.sampleSeconds <= 0 || o.soakRate <= 0 || o.crashJobs < 1
                    || o.crashInstances < 1 || o.crashWorkers < 1 || o.killAfter <= 0 || o.killAfter >= 1
                    || o.staleAfterMillis < 100 || o.maintenanceTickMillis < 10) {
                throw new BenchConfig.UsageException("option out of range\n" + usage());
            }
            return o;
        }

        private static final List<String> OWN = List.of("--soak-minutes", "--soak-seconds", "--sample-seconds",
                "--soak-rate", "--soak-systems", "--dead-limit", "--min-throughput-ratio", "--crash-jobs",
                "--crash-instances", "--crash-workers", "--crash-delay-ms", "--kill-after", "--stale-after-ms",
                "--maintenance-tick-ms", "--out");

        private void set(String k, String v) {
            switch (k) {
                case "--soak-minutes" -> soakMinutes = Double.parseDouble(v);
                case "--soak-seconds" -> soakSeconds = Integer.parseInt(v);
                case "--sample-seconds" -> sampleSeconds = Double.parseDouble(v);
                case "--soak-rate" -> soakRate = Double.parseDouble(v);
                case "--soak-systems" -> {
                    soakSystems = List.of(v.toLowerCase(Locale.ROOT).split(","));
                    if (!soakSystems.contains("riffle") || !List.of("riffle", "baseline").containsAll(soakSystems)) {
                        throw new BenchConfig.UsageException("--soak-systems: riffle or riffle,baseline");
                    }
                }
                case "--dead-limit" -> deadLimit = Long.parseLong(v);
                case "--min-throughput-ratio" -> minThroughputRatio = Double.parseDouble(v);
                case "--crash-jobs" -> crashJobs = Integer.parseInt(v.replace("_", ""));
                case "--crash-instances" -> crashInstances = Integer.parseInt(v);
                case "--crash-workers" -> crashWorkers = Integer.parseInt(v);
                case "--crash-delay-ms" -> crashDelayMillis = Integer.parseInt(v);
                case "--kill-after" -> killAfter = Double.parseDouble(v);
                case "--stale-after-ms" -> staleAfterMillis = Integer.parseInt(v);
                case "--maintenance-tick-ms" -> maintenanceTickMillis = Integer.parseInt(v);
                case "--out" -> out = Path.of(v);
                default -> throw new IllegalStateException(k);
            }
        }
    }

    /** Runs the validation; exit code 1 when a criterion fails, 2 on a bad command line. */
    public static void main(String[] args) throws Exception {
        try {
            Map<String, Object> result = run(args, System.getenv());
            System.exit(Boolean.TRUE.equals(result.get("all_pass")) ? 0 : 1);
        } catch (BenchConfig.UsageException e) {
            System.out.println(e.getMessage());
            System.exit(e.getMessage().startsWith("Usage:") ? 0 : 2);
        }
    }

    /** Runs every criterion, writes the result directory, and returns the result tree (with {@code dir}). */
    @SuppressWarnings("unchecked")
    static Map<String, Object> run(String[] args, Map<String, String> env) throws Exception {
        System.setProperty("java.awt.headless", "true"); // the PNG is drawn without a display
        Options o = Options.parse(args);
        BenchConfig cfg = BenchConfig.parse(o.benchArgs.toArray(String[]::new), env);
        cfg.steadySeconds = o.soakSecondsEffective();
        Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        Path dir = o.out.resolve(started.toString().replace(':', '-'));
        Files.createDirectories(dir);
        Monitor.useDatabase(cfg);

        Map<String, Object> result = new LinkedHashMap<>();
        result.put("format", "riffle-validation/1");
        result.put("command", "docs/validation/run " + String.join(" ", args));
        result.put("started_at", started.toString());
        Map<String, Object> machine = BenchMain.machineFacts();
        result.put("machine", machine);
        result.put("options", optionsMap(o, cfg));
        List<Map<String, Object>> runs = new ArrayList<>();
        List<Map<String, Object>> frontier = new ArrayList<>();
        Map<String, List<DeadTupleSampler.Sample>> soakSamples = new LinkedHashMap<>();
        Map<String, Double> loadStart = new LinkedHashMap<>();
        Map<String, Double> loadEnd = new LinkedHashMap<>();
        Map<String, Object> crash;

        try (Monitor mon = new Monitor(cfg)) {
            result.put("postgres", mon.serverFacts());
            mon.enablePgstattuple();
            ServerCpu serverCpu = mon.serverCpu();
            Runner runner = new Runner(cfg, mon, serverCpu,
                    name -> name.equals("baseline") ? new BaselineSystem(cfg) : new RiffleSystem(cfg));
            List<String> systems = List.of("baseline", "riffle");
            System.out.printf(Locale.ROOT, "riffle validation: %s; soak %d s per system at %,.0f jobs/s; out %s%n",
                    cfg.url.r2dbcUrl(), cfg.steadySeconds, o.soakRate, dir);

            if (cfg.warmupJobs > 0) {
                // The bench's rule (BenchMain.warmUp): every measured handler delay, repeated until the JIT settled.
                // One pass without handler work left the harness JVM compiling during the soak and the in-JVM runs.
                result.put("warmup", BenchMain.warmUp(runner, systems, cfg));
            }

            // 3 (and 1): the drain profiles, alternating the systems; criterion 1 reads the table statistics after each
            for (Profile p : cfg.profiles) {
                if (p.steady()) {
                    continue;
                }
                for (int d : cfg.delaysMillis) {
                    for (String sys : systems) {
                        Map<String, Object> r = runner.drainProfile(sys, p, d);
                        runs.add(r);
                        frontier.add(frontierCheck(mon, r));
                        printRun(r);
                    }
                }
            }

            // 2 (and 3, 1): the soak, Riffle first, then the baseline for the same duration at the same rate
            Profile soak = new Profile("soak", true, 1, 0, false, 0);
            for (String sys : o.soakSystems) {
                String schema = sys.equals("baseline") ? "bench_baseline" : "bench_riffle";
                Map<String, Object> r;
                try (DeadTupleSampler sampler = new DeadTupleSampler(cfg, schema,
                        Math.max(100, Math.round(o.sampleSeconds * 1000)))) {
                    runner.onPhase(sampler::mark);
                    try {
                        r = runner.steadyProfile(sys, soak, o.soakRate, "--soak-rate");
                    } finally {
                        runner.onPhase(null);
                    }
                    sampler.close();
                    soakSamples.put(sys, sampler.samples());
                    loadStart.put(sys, sampler.loadStart());
                    loadEnd.put(sys, sampler.loadEnd());
                    if (sampler.error() != null) {
                        r.put("sampler_error", sampler.error());
                    }
                }
                runs.add(r);
                frontier.add(frontierCheck(mon, r));
                printRun(r);
            }

            // 4: crash under load
            CrashRun.Options co = new CrashRun.Options(o.crashJobs, o.crashInstances, o.crashWorkers,
                    o.crashDelayMillis, o.killAfter, Duration.ofMillis(o.staleAfterMillis),
                    Duration.ofMillis(o.maintenanceTickMillis),
                    Math.max(cfg.drainTimeoutSeconds, CrashRun.MIN_TIMEOUT_SECONDS));
            crash = new CrashRun(cfg, mon, co).run(dir.resolve("crash-timeline.csv"));
            System.out.println("[crash] " + crash.get("metrics"));
        }
        machine.put("loadavg_end", BenchMain.loadavg());
        result.put("finished_at", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());

        // ------------------------------------------------------------------------------------- verdicts
        Map<String, Object> c1 = criterionFrontier(frontier);
        Map<String, Object> c2 = criterionSoak(o, soakSamples, loadStart, loadEnd, frontier);
        Map<String, Object> c3 = criterionThroughput(o, runs);
        Map<String, Object> c4 = criterionCrash(crash);
        Map<String, Object> criteria = new LinkedHashMap<>();
        criteria.put("1_no_frontier_table", c1);
        criteria.put("2_dead_tuples_soak", c2);
        criteria.put("3_throughput", c3);
        criteria.put("4_crash_recovery", c4);
        boolean allPass = criteria.values().stream().allMatch(c -> "PASS".equals(((Map<String, Object>) c).get("verdict")));
        result.put("criteria", criteria);
        result.put("all_pass", allPass);
        result.put("frontier_checks", frontier);
        result.put("crash", crash);
        result.put("runs", new ArrayList<Object>(runs));

        Files.writeString(dir.resolve("results.json"), Json.write(result));
        writeSoakCsv(dir.resolve("soak-dead-tuples.csv"), soakSamples, loadStart, loadEnd);
        SoakChart.write(dir.resolve("soak-dead-tuples.png"), soakSamples, loadStart, o.deadLimit,
                "Dead tuples during a " + cfg.steadySeconds + " s soak at " + Math.round(o.soakRate) + " jobs/s");
        writeThroughputCsv(dir.resolve("throughput.csv"), (List<Map<String, Object>>) c3.get("rows"));
        String verdict = VerdictReport.markdown(result);
        Files.writeString(dir.resolve("verdict.md"), verdict);
        System.out.println();
        System.out.print(verdict);
        System.out.println("\nwrote " + dir.toAbsolutePath());
        result.put("dir", dir.toString());
        return result;
    }

    private static Map<String, Object> optionsMap(Options o, BenchConfig cfg) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("soak_seconds", cfg.steadySeconds);
        m.put("sample_seconds", o.sampleSeconds);
        m.put("soak_rate", o.soakRate);
        m.put("soak_workers", cfg.steadyWorkers);
        m.put("soak_delay_ms", cfg.steadyDelayMillis);
        m.put("soak_systems", new ArrayList<Object>(o.soakSystems));
        m.put("dead_limit", o.deadLimit);
        m.put("min_throughput_ratio", o.minThroughputRatio);
        m.put("keep_up", o.keepUp);
        m.put("mutations_per_job_limit", MUTATIONS_PER_JOB_LIMIT);
        m.put("crash_jobs", o.crashJobs);
        m.put("crash_instances", o.crashInstances);
        m.put("crash_workers", o.crashWorkers);
        m.put("crash_delay_ms", o.crashDelayMillis);
        m.put("kill_after", o.killAfter);
        m.put("stale_after_ms", o.staleAfterMillis);
        m.put("maintenance_tick_ms", o.maintenanceTickMillis);
        m.put("bench_args", new ArrayList<Object>(o.benchArgs));
        m.put("bench", cfg.toMap());
        return m;
    }

    @SuppressWarnings("unchecked")
    private static void printRun(Map<String, Object> r) {
        Map<String, Object> m = (Map<String, Object>) r.get("metrics");
        System.out.printf(Locale.ROOT, "[%s] %-8s completed %s jobs/s, %s of %s jobs, dead tuples at end %s%n",
                r.get("key"), r.get("system"), Report.fmt(m.get("completed_jobs_per_s"), "int"),
                m.get("jobs_completed"), m.get("jobs_enqueued"), m.get("dead_tuples_end"));
    }

    // ------------------------------------------------------------------------------------- criterion 1

    /**
     * Table statistics of the run's schema right after the run (the runner closed the system and waited for the
     * statistics to be flushed; the schema was created fresh for the run): every table UPDATEd or DELETEd, with the
     * count per job, and every relation named like a frontier.
     */
    @SuppressWarnings("unchecked")
    static Map<String, Object> frontierCheck(Monitor mon, Map<String, Object> run) throws SQLException {
        String system = (String) run.get("system");
        String schema = system.equals("baseline") ? "bench_baseline" : "bench_riffle";
        long jobs = ((Number) ((Map<String, Object>) run.get("metrics")).get("jobs_completed")).longValue();
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("system", system);
        c.put("run", run.get("key"));
        c.put("schema", schema);
        c.put("jobs", jobs);
        List<Object> named = new ArrayList<>();
        mon.statements++;
        try (PreparedStatement ps = mon.connection().prepareStatement("SELECT c.relname FROM pg_class c"
                + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ?"
                + " AND c.relkind IN ('r', 'p', 'v', 'm') AND c.relname ~ ? ORDER BY 1")) {
            ps.setString(1, schema);
            ps.setString(2, FRONTIER_NAMES);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    named.add(rs.getString(1));
                }
            }
        }
        c.put("frontier_named_relations", named);
        long tables = 0;
        long appendOnly = 0;
        long appendOnlyMutations = 0;
        long appendOnlyInserts = 0;
        List<Object> mutated = new ArrayList<>();
        List<Object> hot = new ArrayList<>();
        mon.statements++;
        try (PreparedStatement ps = mon.connection().prepareStatement("SELECT relname, n_tup_ins, n_tup_upd,"
                + " n_tup_del, relname ~ ? FROM pg_stat_user_tables WHERE schemaname = ?"
                + " AND relname <> 'flyway_schema_history' ORDER BY relname")) {
            ps.setString(1, APPEND_ONLY_PARTITIONS);
            ps.setString(2, schema);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    tables++;
                    long upd = rs.getLong(3);
                    long del = rs.getLong(4);
                    if (rs.getBoolean(5)) {
                        appendOnly++;
                        appendOnlyMutations += upd + del;
                        appendOnlyInserts += rs.getLong(2);
                    }
                    if (upd + del > 0) {
                        Map<String, Object> t = new LinkedHashMap<>();
                        t.put("table", rs.getString(1));
                        t.put("n_tup_ins", rs.getLong(2));
                        t.put("n_tup_upd", upd);
                        t.put("n_tup_del", del);
                        double perJob = jobs == 0 ? 0 : (double) (upd + del) / jobs;
                        t.put("mutations_per_job", perJob);
                        mutated.add(t);
                        if (perJob >= MUTATIONS_PER_JOB_LIMIT || rs.getBoolean(5)) {
                            hot.add(rs.getString(1));
                        }
                    }
                }
            }
        }
        c.put("tables_checked", tables);
        c.put("append_only_partitions_checked", appendOnly);
        c.put("append_only_partition_inserts", appendOnlyInserts);
        c.put("append_only_partition_updates_deletes", appendOnlyMutations);
        c.put("tables_updated_or_deleted", mutated);
        c.put("tables_mutated_by_the_hot_path", hot);
        c.put("frontier_found", !named.isEmpty() || !hot.isEmpty());
        return c;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> criterionFrontier(List<Map<String, Object>> checks) {
        List<Map<String, Object>> riffle = checks.stream().filter(c -> "riffle".equals(c.get("system"))).toList();
        List<Map<String, Object>> baseline = checks.stream().filter(c -> "baseline".equals(c.get("system"))).toList();
        boolean riffleClean = !riffle.isEmpty() && riffle.stream().noneMatch(c -> (Boolean) c.get("frontier_found"))
                && riffle.stream().allMatch(c -> ((Number) c.get("append_only_partition_inserts")).longValue() > 0);
        // the control: the same check must find the baseline's job table, or it checks nothing
        boolean controlDetects = baseline.isEmpty()
                || baseline.stream().allMatch(c -> (Boolean) c.get("frontier_found"));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("verdict", riffleClean && controlDetects ? "PASS" : "FAIL");
        m.put("riffle_runs_checked", riffle.size());
        m.put("riffle_jobs_checked", riffle.stream().mapToLong(c -> ((Number) c.get("jobs")).longValue()).sum());
        m.put("riffle_tables_per_run", riffle.isEmpty() ? 0 : riffle.get(0).get("tables_checked"));
        m.put("riffle_append_only_partitions_per_run", riffle.isEmpty() ? 0
                : riffle.get(0).get("append_only_partitions_checked"));
        m.put("riffle_frontier_named_relations", riffle.stream()
                .flatMap(c -> ((List<Object>) c.get("frontier_named_relations")).stream()).distinct().toList());
        m.put("riffle_tables_mutated_by_the_hot_path", riffle.stream()
                .flatMap(c -> ((List<Object>) c.get("tables_mutated_by_the_hot_path")).stream()).distinct().toList());
        m.put("riffle_append_only_updates_deletes", riffle.stream()
                .mapToLong(c -> ((Number) c.get("append_only_partition_updates_deletes")).longValue()).sum());
        double worst = 0;
        String worstTable = null;
        for (Map<String, Object> c : riffle) {
            for (Object t : (List<Object>) c.get("tables_updated_or_deleted")) {
                double pj = ((Number) ((Map<String, Object>) t).get("mutations_per_job")).doubleValue();
                if (pj > worst) {
                    worst = pj;
                    worstTable = (String) ((Map<String, Object>) t).get("table");
                }
            }
        }
        m.put("riffle_max_mutations_per_job", worst);
        m.put("riffle_max_mutations_table", worstTable);
        m.put("baseline_control_detected", baseline.isEmpty() ? null : controlDetects);
        m.put("baseline_tables_mutated_by_the_hot_path", baseline.stream()
                .flatMap(c -> ((List<Object>) c.get("tables_mutated_by_the_hot_path")).stream()).distinct().toList());
        return m;
    }

    // ------------------------------------------------------------------------------------- criterion 2

    /**
     * Steady window: from {@code min(60 s, 10 %)} of the soak after the producer's start to the producer's stop
     * (the first moments include the schema's creation and the engine's start). Closure partitions: every sample.
     */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> criterionSoak(Options o, Map<String, List<DeadTupleSampler.Sample>> samples,
                                                     Map<String, Double> loadStart, Map<String, Double> loadEnd,
                                                     List<Map<String, Object>> frontier) {
        Map<String, Object> m = new LinkedHashMap<>();
        Map<String, Object> per = new LinkedHashMap<>();
        for (Map.Entry<String, List<DeadTupleSampler.Sample>> e : samples.entrySet()) {
            String sys = e.getKey();
            double start = loadStart.getOrDefault(sys, Double.NaN);
            double end = loadEnd.getOrDefault(sys, Double.NaN);
            double warm = Double.isNaN(start) || Double.isNaN(end) ? 0 : Math.min(60, 0.1 * (end - start));
            List<DeadTupleSampler.Sample> all = e.getValue();
            List<DeadTupleSampler.Sample> steady = all.stream().filter(s -> !Double.isNaN(start) && !Double.isNaN(end)
                    && s.seconds() >= start + warm && s.seconds() <= end).toList();
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("samples", all.size());
            s.put("steady_samples", steady.size());
            s.put("steady_window_s", Double.isNaN(start) ? null : List.of(start + warm - start, end - start));
            s.put("steady_max_dead_schema", steady.stream().mapToLong(DeadTupleSampler.Sample::schemaDead).max()
                    .orElse(-1));
            s.put("steady_mean_dead_schema", steady.stream().mapToLong(DeadTupleSampler.Sample::schemaDead)
                    .average().orElse(-1));
            s.put("max_dead_schema_any_sample", all.stream().mapToLong(DeadTupleSampler.Sample::schemaDead).max()
                    .orElse(-1));
            s.put("max_dead_closure_partitions", all.stream().mapToLong(DeadTupleSampler.Sample::closureDead).max()
                    .orElse(-1));
            s.put("last_sample_dead_schema", all.isEmpty() ? -1 : all.get(all.size() - 1).schemaDead());
            steady.stream().max(java.util.Comparator.comparingLong(DeadTupleSampler.Sample::schemaDead))
                    .ifPresent(w -> s.put("steady_worst_table", w.worstTable() + " (" + w.worstDead() + ")"));
            per.put(sys, s);
        }
        Map<String, Object> r = (Map<String, Object>) per.get("riffle");
        long closureUpdates = frontier.stream().filter(c -> "riffle".equals(c.get("system"))
                        && "profile soak".equals(c.get("run")))
                .flatMap(c -> ((List<Object>) c.get("tables_updated_or_deleted")).stream())
                .filter(t -> ((String) ((Map<String, Object>) t).get("table")).matches(DeadTupleSampler.CLOSURE_PARTITIONS))
                .count();
        boolean pass = r != null && ((Number) r.get("steady_samples")).longValue() > 0
                && ((Number) r.get("steady_max_dead_schema")).longValue() <= o.deadLimit
                && ((Number) r.get("max_dead_closure_partitions")).longValue() == 0 && closureUpdates == 0;
        m.put("verdict", pass ? "PASS" : "FAIL");
        m.put("limit_schema", o.deadLimit);
        m.put("limit_closure_partitions", 0);
        m.put("riffle_closure_partitions_updated_or_deleted", closureUpdates);
        m.put("systems", per);
        return m;
    }

    // ------------------------------------------------------------------------------------- criterion 3

    @SuppressWarnings("unchecked")
    private static Map<String, Object> criterionThroughput(Options o, List<Map<String, Object>> runs) {
        Map<String, Map<String, Map<String, Object>>> byKey = new LinkedHashMap<>();
        for (Map<String, Object> r : runs) {
            byKey.computeIfAbsent((String) r.get("key"), k -> new LinkedHashMap<>()).put((String) r.get("system"), r);
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        boolean pass = !byKey.isEmpty();
        for (Map.Entry<String, Map<String, Map<String, Object>>> e : byKey.entrySet()) {
            Map<String, Object> riffle = e.getValue().get("riffle");
            Map<String, Object> baseline = e.getValue().get("baseline");
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("profile", e.getKey());
            boolean soak = "steady".equals(riffle == null ? null : riffle.get("scenario"));
            Double rj = riffle == null ? null : Summary.num(((Map<String, Object>) riffle.get("metrics"))
                    .get("completed_jobs_per_s"));
            Double bj = baseline == null ? null : Summary.num(((Map<String, Object>) baseline.get("metrics"))
                    .get("completed_jobs_per_s"));
            row.put("baseline_jobs_per_s", bj);
            row.put("riffle_jobs_per_s", rj);
            row.put("ratio", rj == null || bj == null || bj == 0 ? null : rj / bj);
            long lost = riffle == null ? -1 : ((Number) ((Map<String, Object>) riffle.get("metrics"))
                    .get("jobs_lost")).longValue();
            row.put("riffle_jobs_lost", lost);
            row.put("riffle_complete", riffle != null && Boolean.TRUE.equals(riffle.get("complete")));
            boolean ok;
            if (soak) {
                // a fixed-rate profile: keeping up with the producer is the throughput
                double target = Summary.num(((Map<String, Object>) riffle.get("metrics")).get("rate_target"));
                double keptUp = rj == null ? 0 : rj / target;
                row.put("rate_target", target);
                row.put("riffle_kept_up", keptUp);
                if (bj != null) {
                    row.put("baseline_kept_up", bj / target);
                }
                row.put("rule", "riffle completed/target >= " + o.keepUp);
                ok = keptUp >= o.keepUp;
            } else {
                row.put("rule", "riffle/baseline >= " + o.minThroughputRatio);
                ok = row.get("ratio") != null && (Double) row.get("ratio") >= o.minThroughputRatio;
            }
            ok = ok && lost == 0 && (Boolean) row.get("riffle_complete");
            row.put("pass", ok);
            pass &= ok;
            rows.add(row);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("verdict", pass ? "PASS" : "FAIL");
        m.put("rows", rows);
        return m;
    }

    // ------------------------------------------------------------------------------------- criterion 4

    @SuppressWarnings("unchecked")
    private static Map<String, Object> criterionCrash(Map<String, Object> crash) {
        Map<String, Object> c = (Map<String, Object>) crash.get("metrics");
        List<String> failures = new ArrayList<>();
        if (!Boolean.TRUE.equals(c.get("recovered"))) {
            failures.add("not every job completed before the timeout");
        }
        if (((Number) c.get("jobs_lost")).longValue() != 0) {
            failures.add("jobs lost");
        }
        if (((Number) c.get("duplicate_completions")).longValue() != 0
                || ((Number) c.get("harness_completed_twice")).longValue() != 0) {
            failures.add("a job completed twice");
        }
        if (((Number) c.get("stale_rescued")).longValue() == 0) {
            failures.add("nothing was rescued: the killed instance held no claims");
        }
        if (((Number) c.get("pruned_slots_after_kill")).longValue() == 0) {
            failures.add("no slot was pruned after the kill: rescue did not run beside prune");
        }
        if (!Boolean.TRUE.equals(c.get("doctor_ok"))) {
            failures.add("proof doctor violations " + c.get("doctor_violations"));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("verdict", failures.isEmpty() ? "PASS" : "FAIL");
        m.put("failures", failures);
        m.putAll(c);
        return m;
    }

    // ------------------------------------------------------------------------------------- files

    private static void writeSoakCsv(Path csv, Map<String, List<DeadTupleSampler.Sample>> samples,
                                     Map<String, Double> loadStart, Map<String, Double> loadEnd) throws Exception {
        List<String> lines = new ArrayList<>();
        lines.add("system,seconds_since_load_start,under_load,dead_tuples_schema,dead_tuples_closure_partitions,"
                + "worst_table,worst_table_dead_tuples");
        for (Map.Entry<String, List<DeadTupleSampler.Sample>> e : samples.entrySet()) {
            double start = loadStart.getOrDefault(e.getKey(), Double.NaN);
            double end = loadEnd.getOrDefault(e.getKey(), Double.NaN);
            double zero = Double.isNaN(start) ? 0 : start;
            for (DeadTupleSampler.Sample s : e.getValue()) {
                boolean under = !Double.isNaN(start) && !Double.isNaN(end) && s.seconds() >= start && s.seconds() <= end;
                lines.add(String.format(Locale.ROOT, "%s,%.1f,%s,%d,%d,%s,%d", e.getKey(), s.seconds() - zero, under,
                        s.schemaDead(), s.closureDead(), s.worstTable() == null ? "" : s.worstTable(), s.worstDead()));
            }
        }
        Files.write(csv, lines);
    }

    private static void writeThroughputCsv(Path csv, List<Map<String, Object>> rows) throws Exception {
        List<String> lines = new ArrayList<>();
        lines.add("profile,baseline_jobs_per_s,riffle_jobs_per_s,riffle_to_baseline,riffle_jobs_lost,pass");
        for (Map<String, Object> r : rows) {
            lines.add(String.format(Locale.ROOT, "%s,%s,%s,%s,%s,%s", r.get("profile"), r.get("baseline_jobs_per_s"),
                    r.get("riffle_jobs_per_s"), r.get("ratio"), r.get("riffle_jobs_lost"), r.get("pass")));
        }
        Files.write(csv, lines);
    }
}
