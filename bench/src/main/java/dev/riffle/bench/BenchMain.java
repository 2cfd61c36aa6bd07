package dev.riffle.bench;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Entry point of the benchmark. See {@link BenchConfig#usage()} for the flags and {@code docs/benchmarks.md} for what
 * the numbers mean.
 */
public final class BenchMain {
    /** Handlers of the unmeasured warm-up drain (--warmup-jobs). */
    private static final int WARMUP_WORKERS = 64;

    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args, System.getenv());
        } catch (BenchConfig.UsageException e) {
            System.out.println(e.getMessage());
            if (!e.getMessage().startsWith("Usage:")) {
                throw new IllegalArgumentException("bad command line (see above)");
            }
        }
    }

    /** Runs the benchmark (or renders an earlier result) and returns the result tree that was written as JSON. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> run(String[] args, Map<String, String> env) throws Exception {
        BenchConfig cfg = BenchConfig.parse(args, env);
        if (cfg.renderFrom != null) {
            Map<String, Object> result = (Map<String, Object>) Json.parse(Files.readString(cfg.renderFrom));
            // The targets are judged again from the stored summary, so a rule changed since the run applies to it.
            Map<String, Object> summary = (Map<String, Object>) result.get("summary");
            Map<String, Object> config = (Map<String, Object>) result.get("config");
            if (summary != null && config != null && config.get("workers") instanceof List<?> ws
                    && config.get("jobs") instanceof Number jobs) {
                result.put("targets", Summary.targets(summary,
                        ws.stream().map(w -> ((Number) w).intValue()).toList(), jobs.intValue()));
            }
            System.out.print(Report.table(result));
            if (cfg.writeDocs != null) {
                Report.writeDocs(cfg.writeDocs, result);
                System.out.println("\nwrote " + cfg.writeDocs);
            }
            return result;
        }

        boolean created = Monitor.useDatabase(cfg);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("format", "riffle-bench/1");
        result.put("command", "mvn -B -q -pl bench exec:java -Dexec.args=\"" + String.join(" ", args) + "\"");
        result.put("started_at", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        Map<String, Object> machine = machineFacts();
        result.put("machine", machine);

        Map<String, Object> systems = new LinkedHashMap<>();
        List<String> runnable = new ArrayList<>();
        Constructor<?> riffleCtor = null;
        for (String s : cfg.systems) {
            if (s.equals("baseline")) {
                systems.put(s, new BaselineSystem(cfg).describe());
                runnable.add(s);
            } else {
                try {
                    riffleCtor = Class.forName("dev.riffle.bench.RiffleSystem").getDeclaredConstructor(BenchConfig.class);
                    QueueSystem probe = (QueueSystem) riffleCtor.newInstance(cfg);
                    systems.put(s, probe.describe());
                    runnable.add(s);
                } catch (ReflectiveOperationException | LinkageError e) {
                    Map<String, Object> d = new LinkedHashMap<>();
                    d.put("available", false);
                    d.put("reason", "RiffleSystem is not built (the engine API was missing at build time): " + e);
                    systems.put(s, d);
                    System.out.println("riffle: not available, running without it (" + e + ")");
                }
            }
        }
        result.put("systems", systems);
        result.put("config", cfg.toMap());
        if (created) {
            System.out.println("created database " + cfg.database);
        }

        final Constructor<?> ctor = riffleCtor;
        List<Map<String, Object>> runs = new ArrayList<>();
        try (Monitor mon = new Monitor(cfg)) {
            result.put("postgres", mon.serverFacts());
            mon.enablePgstattuple();
            result.put("dead_tuple_method", mon.pgstattupleNote());
            ServerCpu serverCpu = mon.serverCpu();
            result.put("server_cpu_method", serverCpu.note());
            result.put("track_functions", mon.enableTrackFunctions());
            Runner runner = new Runner(cfg, mon, serverCpu, name -> newSystem(name, cfg, ctor));
            System.out.printf(Locale.ROOT, "riffle-bench: %s on %s (%s), systems %s, scenarios %s, profiles %s%n",
                    cfg.smoke ? "smoke run" : "full run", cfg.url.r2dbcUrl(), cfg.urlSource, runnable, cfg.scenarios,
                    cfg.profiles.stream().map(Profile::name).toList());

            if (cfg.warmupJobs > 0) {
                result.put("warmup", warmUp(runner, runnable, cfg));
            }
            for (int round = 1; round <= cfg.rounds; round++) {
                List<String> order = new ArrayList<>(runnable);
                if (round % 2 == 0) {
                    java.util.Collections.reverse(order);
                }
                Map<String, Double> peak = new LinkedHashMap<>();
                Map<String, String> peakRun = new LinkedHashMap<>();
                // Each system's completed jobs/s per drain run key: steady and pinned run at a fraction of the
                // system's own drain in the steady shape, steady-b<P> at a fraction of the baseline's (see below).
                Map<String, Map<String, Double>> drainByRun = new LinkedHashMap<>();
                if (cfg.scenarios.contains("drain")) {
                    for (int w : cfg.workers) {
                        for (int d : cfg.delaysMillis) {
                            for (String sys : order) {
                                long t = System.nanoTime();
                                final int ww = w;
                                final int dd = d;
                                Map<String, Object> r = attempt(runner, sys, "drain", Runner.key("drain", w, d),
                                        () -> runner.drain(sys, ww, dd));
                                record(runs, r, round, t);
                                notePeak(peak, peakRun, sys, r);
                                noteRun(drainByRun.computeIfAbsent(sys, k -> new LinkedHashMap<>()), r);
                            }
                        }
                    }
                }
                for (Profile p : cfg.profiles) {
                    if (p.steady()) {
                        continue;
                    }
                    for (int d : cfg.delaysMillis) {
                        for (String sys : order) {
                            long t = System.nanoTime();
                            final int dd = d;
                            Map<String, Object> r = attempt(runner, sys, "drain", p.key(d),
                                    () -> runner.drainProfile(sys, p, dd));
                            record(runs, r, round, t);
                            notePeak(peak, peakRun, sys, r);
                        }
                    }
                }
                String sameShape = Runner.key("drain", cfg.steadyWorkers, cfg.steadyDelayMillis);
                Map<String, Double> baselineByRun = drainByRun.getOrDefault("baseline", Map.of());
                for (String scenario : List.of("steady", "steady-profiles", "pinned")) {
                    if (scenario.equals("steady-profiles")) {
                        steadyProfiles(cfg, runner, runs, round, order, sameShape, baselineByRun, peak, peakRun);
                        continue;
                    }
                    if (!cfg.scenarios.contains(scenario)) {
                        continue;
                    }
                    for (String sys : order) {
                        double rate;
                        String source;
                        // The system's own drain in the steady run's shape (its W and handler delay): its best drain
                        // of any shape (a W = 256 profile without work) was up to twice what it completes at W = 64
                        // with 1 ms of work, so half of it saturated both systems and their p99 measured the backlog.
                        Double own = drainByRun.getOrDefault(sys, Map.of()).get(sameShape);
                        if (cfg.steadyRate > 0) {
                            rate = cfg.steadyRate;
                            source = "--steady-rate";
                        } else if (own != null) {
                            rate = Math.max(1, Math.floor(own * cfg.steadyLoad));
                            source = cfg.steadyLoad + " x own drain peak at the steady shape " + Math.round(own)
                                    + " jobs/s (" + sameShape + ")";
                        } else if (peak.containsKey(sys)) {
                            rate = Math.max(1, Math.floor(peak.get(sys) * cfg.steadyLoad));
                            source = cfg.steadyLoad + " x drain peak " + Math.round(peak.get(sys)) + " jobs/s ("
                                    + peakRun.get(sys) + "; no drain at the steady shape " + sameShape
                                    + " in this round)";
                        } else {
                            rate = 1000;
                            source = "fallback (no drain run and no --steady-rate)";
                        }
                        long t = System.nanoTime();
                        boolean pinned = scenario.equals("pinned");
                        record(runs, attempt(runner, sys, scenario, scenario,
                                () -> runner.steady(sys, rate, source, pinned)), round, t);
                    }
                }
            }
            if (mon.checkpointNote != null) {
                result.put("checkpoint_note", mon.checkpointNote);
            }
        }
        machine.put("loadavg_end", loadavg());
        result.put("finished_at", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());

        Summary.linkPinnedToSteady(runs);
        Map<String, Object> summary = Summary.summarize(runs, runnable);
        result.put("summary", summary);
        result.put("targets", Summary.targets(summary, cfg.workers, cfg.jobs));
        result.put("notes", notes(cfg, (Map<String, Object>) result.get("postgres"), result));
        result.put("runs", new ArrayList<Object>(runs));

        long failed = runs.stream().filter(r -> r.containsKey("failed")).count();
        Path out = cfg.out;
        if (out.toAbsolutePath().getParent() != null) {
            Files.createDirectories(out.toAbsolutePath().getParent());
        }
        Files.writeString(out, Json.write(result));
        System.out.print(Report.table(result));
        System.out.println("\nwrote " + out.toAbsolutePath());
        if (cfg.writeDocs != null) {
            Report.writeDocs(cfg.writeDocs, result);
            System.out.println("wrote " + cfg.writeDocs.toAbsolutePath());
        }
        if (failed > 0) {
            throw new IllegalStateException(failed + " run(s) failed; see \"failed\" in " + out.toAbsolutePath());
        }
        return result;
    }

    /** Remembers the highest completed jobs/s of a system's drain runs in this round, and which run it was. */
    @SuppressWarnings("unchecked")
    private static void notePeak(Map<String, Double> peak, Map<String, String> peakRun, String sys,
                                 Map<String, Object> r) {
        Object c = ((Map<String, Object>) r.get("metrics")).get("completed_jobs_per_s");
        if (c instanceof Number n && (!peak.containsKey(sys) || n.doubleValue() > peak.get(sys))) {
            peak.put(sys, n.doubleValue());
            peakRun.put(sys, String.valueOf(r.get("key")));
        }
    }

    /** Remembers a run's completed jobs/s under its key. */
    @SuppressWarnings("unchecked")
    private static void noteRun(Map<String, Double> byRun, Map<String, Object> r) {
        Object c = ((Map<String, Object>) r.get("metrics")).get("completed_jobs_per_s");
        if (c instanceof Number n) {
            byRun.put(String.valueOf(r.get("key")), n.doubleValue());
        }
    }

    private interface RunBody {
        Map<String, Object> run() throws Exception;
    }

    /**
     * Unmeasured warm-up drains (--warmup-jobs), in this JVM, before the first measured run. Each system drains
     * --warmup-jobs jobs at W=64 for every handler delay the run measures (the drain delays and the steady delay), so
     * the code paths of a handler that waits (timers, smaller claims) are compiled too, and repeats that pass until
     * the JIT settled ({@link JitSettle}).
     * Both systems get the same rule. Returns what each pass took, for the JSON results. {@link Validate} warms up
     * the same way.
     */
    static List<Object> warmUp(Runner runner, List<String> systems, BenchConfig cfg) {
        java.util.SortedSet<Integer> delays = new java.util.TreeSet<>(cfg.delaysMillis);
        delays.add(cfg.steadyDelayMillis);
        List<Object> passes = new ArrayList<>();
        for (String sys : systems) {
            for (int pass = 1; pass <= JitSettle.MAX_PASSES; pass++) {
                JitSettle timing = JitSettle.pass();
                boolean failed = false;
                for (int d : delays) {
                    Map<String, Object> r = attempt(runner, sys, "warmup", "warmup",
                            () -> runner.warmup(sys, WARMUP_WORKERS, d, cfg.warmupJobs));
                    if (r.get("failed") != null) {
                        System.out.println("[warm-up] " + sys + " failed: " + r.get("failed"));
                        failed = true;
                    }
                }
                double seconds = timing.seconds();
                Double jitShare = timing.share();
                System.out.printf(Locale.ROOT, "[warm-up] %-8s pass %d: %,d jobs at W=%d for each handler delay %s ms"
                                + " in %.1f s, JIT compiling %s of it (not measured)%n", sys, pass, cfg.warmupJobs,
                        WARMUP_WORKERS, delays, seconds, JitSettle.format(jitShare));
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("system", sys);
                m.put("pass", pass);
                m.put("delays_ms", new ArrayList<Object>(delays));
                m.put("seconds", seconds);
                m.put("jit_share", jitShare);
                passes.add(m);
                if (failed || JitSettle.settled(jitShare)) {
                    break;
                }
            }
        }
        return passes;
    }

    /** Runs one scenario; a failure becomes a run record with {@code failed} so the other runs still happen. */
    private static Map<String, Object> attempt(Runner runner, String system, String scenario, String key, RunBody body) {
        try {
            Map<String, Object> r = body.run();
            runner.forgetSystems();
            return r;
        } catch (Exception | LinkageError e) {
            runner.cleanUpAfterFailure();
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            java.io.StringWriter sw = new java.io.StringWriter();
            e.printStackTrace(new java.io.PrintWriter(sw));
            System.err.println("run failed: " + system + " " + key + "\n" + sw);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("system", system);
            r.put("scenario", scenario);
            r.put("key", key);
            r.put("failed", e.toString());
            r.put("metrics", new LinkedHashMap<String, Object>());
            return r;
        }
    }

    private static QueueSystem newSystem(String name, BenchConfig cfg, Constructor<?> riffleCtor) {
        if (name.equals("baseline")) {
            return new BaselineSystem(cfg);
        }
        try {
            return (QueueSystem) riffleCtor.newInstance(cfg);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings("unchecked")
    /**
     * The steady profiles of one round: both systems at a fraction of the baseline's drain in the steady shape
     * ({@code steady-b<P>}) or at a fixed rate ({@code steady-r<R>}). They run before the pinned scenario: after the
     * baseline's pinned run (a held xmin, hundreds of thousands of dead tuples, a backlog left after recovery) the
     * baseline could not keep its own 50 % rate, and the p99 ratio compared Riffle with a saturated baseline.
     */
    private static void steadyProfiles(BenchConfig cfg, Runner runner, List<Map<String, Object>> runs, int round,
                                       List<String> order, String sameShape, Map<String, Double> baselineByRun,
                                       Map<String, Double> peak, Map<String, String> peakRun) {
        for (Profile p : cfg.profiles) {
            if (!p.steady()) {
                continue;
            }
            double rate;
            String source;
            // The baseline's peak in the steady run's own shape (its handlers and handler delay): the
            // baseline's best drain of any shape (W = 256, no work) was more than twice what either system
            // completes at W = 64 with 1 ms of work, so half of it could be kept up by neither.
            if (p.fixedRate() > 0) {
                rate = p.fixedRate();
                source = "fixed by the profile";
            } else if (baselineByRun.containsKey(sameShape)) {
                rate = Math.max(1, Math.floor(baselineByRun.get(sameShape) * p.baselineLoad()));
                source = p.baselineLoad() + " x baseline drain peak at the steady shape "
                        + Math.round(baselineByRun.get(sameShape)) + " jobs/s (" + sameShape + ")";
            } else if (peak.containsKey("baseline")) {
                rate = Math.max(1, Math.floor(peak.get("baseline") * p.baselineLoad()));
                source = p.baselineLoad() + " x baseline drain peak " + Math.round(peak.get("baseline"))
                        + " jobs/s (" + peakRun.get("baseline") + "; no baseline drain at the steady shape "
                        + sameShape + " in this round)";
            } else if (cfg.steadyRate > 0) {
                rate = cfg.steadyRate;
                source = "--steady-rate (no baseline drain run in this round)";
            } else {
                rate = 1000;
                source = "fallback (no baseline drain run in this round and no --steady-rate)";
            }
            System.out.printf(Locale.ROOT, "[round %d] %s: both systems at %,.0f jobs/s = %s%n", round,
                    p.name(), rate, source);
            for (String sys : order) {
                long t = System.nanoTime();
                record(runs, attempt(runner, sys, "steady", p.key(0),
                        () -> runner.steadyProfile(sys, p, rate, source)), round, t);
            }
        }
    }

    private static void record(List<Map<String, Object>> runs, Map<String, Object> r, int round, long startNanos) {
        Map<String, Object> withRound = new LinkedHashMap<>();
        withRound.put("round", round);
        withRound.putAll(r);
        double wall = (System.nanoTime() - startNanos) / 1e9;
        withRound.put("wall_seconds", wall);
        runs.add(withRound);
        Map<String, Object> m = (Map<String, Object>) r.get("metrics");
        if (r.containsKey("failed")) {
            System.out.printf(Locale.ROOT, "[round %d] %-26s %-8s FAILED: %s%n", round, r.get("key"), r.get("system"),
                    r.get("failed"));
            return;
        }
        StringBuilder line = new StringBuilder();
        line.append(String.format(Locale.ROOT, "[round %d] %-30s %-8s completed %s jobs/s", round, r.get("key"),
                r.get("system"), Report.fmt(m.get("completed_jobs_per_s"), "int")));
        if (m.containsKey("wal_bytes_per_job_drain")) {
            line.append(", enqueue ").append(Report.fmt(m.get("enqueue_jobs_per_s"), "int")).append(" jobs/s")
                    .append(", WAL ").append(Report.fmt(m.get("wal_bytes_per_job_drain"), "d0")).append(" B/job (drain)")
                    .append(", commits ").append(Report.fmt(m.get("commits_per_job_drain"), "d4")).append("/job")
                    .append(", CPU server ").append(Report.fmt(m.get("server_cpu_us_per_job_drain"), "d0"))
                    .append(" / JVM ").append(Report.fmt(m.get("jvm_cpu_us_per_job_drain"), "d0")).append(" µs/job");
        } else {
            line.append(" at ").append(Report.fmt(m.get("rate_target"), "int")).append(" jobs/s target, pickup p99 ")
                    .append(Report.fmt(m.get("pickup_p99_ms"), "d2")).append(" ms");
            if (m.containsKey("second_half_pickup_p99_ms")) {
                line.append(" (second half ").append(Report.fmt(m.get("second_half_pickup_p99_ms"), "d2")).append(" ms)");
            }
            line.append(", CPU server ").append(Report.fmt(m.get("server_cpu_us_per_job"), "d0"))
                    .append(" / JVM ").append(Report.fmt(m.get("jvm_cpu_us_per_job"), "d0")).append(" µs/job");
            if (m.containsKey("pinned_completed_jobs_per_s")) {
                line.append(", pinned ").append(Report.fmt(m.get("pinned_completed_jobs_per_s"), "int"))
                        .append(" jobs/s, backlog after recovery ").append(Report.fmt(m.get("backlog_end_recovery"), "int"));
            }
        }
        if (m.get("claim_ready_us_per_claimed_job") != null || m.get("complete_compact_us_per_completed_job") != null) {
            line.append(", claim_ready ").append(Report.fmt(m.get("claim_ready_us_per_claimed_job"), "d0"))
                    .append(" / complete_compact ").append(Report.fmt(m.get("complete_compact_us_per_completed_job"), "d0"))
                    .append(" µs/job");
        }
        line.append(", dead ").append(Report.fmt(m.get("dead_tuples_end"), "int"))
                .append(", lost ").append(Report.fmt(m.get("jobs_lost"), "int"))
                .append(String.format(Locale.ROOT, " (%.1f s)", wall));
        if (r.containsKey("first_error")) {
            line.append(", errors ").append(m.get("errors")).append(" (first: ").append(r.get("first_error")).append(')');
        }
        System.out.println(line);
    }

    private static List<Object> notes(BenchConfig cfg, Map<String, Object> pg, Map<String, Object> result) {
        List<Object> n = new ArrayList<>();
        if (pg != null && "off".equals(pg.get("autovacuum"))) {
            n.add("**autovacuum is off on this server**: nothing reclaims the baseline's dead tuples during a run"
                    + (cfg.baselineVacuumSeconds > 0 ? " except its own VACUUM every " + cfg.baselineVacuumSeconds
                    + " s (--baseline-vacuum-s)" : " (use --baseline-vacuum-s to give it a periodic VACUUM)")
                    + ", which makes its claims slower as they accumulate.");
        }
        if (result.get("checkpoint_note") instanceof String note) {
            n.add(note + ".");
        }
        n.add("Each run starts from a freshly created schema (`bench_baseline` or `bench_riffle`); the systems are"
                + " alternated run by run (order reversed every other round).");
        n.add("Throughput: drain = jobs / (last durable completion − handler start); enqueue = jobs / pre-enqueue wall"
                + " time (" + cfg.enqueueConcurrency + " concurrent calls of " + cfg.enqueueBatch + " jobs each).");
        n.add("Latency: from the moment the producer's enqueue commit returned to handler start (pickup) and to the"
                + " moment the completion was durable; HdrHistogram, microsecond resolution. The producer commits what"
                + " is due every " + cfg.producerTickMillis + " ms. A handler that starts before the producer saw its"
                + " commit acknowledgement counts as 0.");
        n.add("WAL bytes: `pg_current_wal_lsn()` difference, which is cluster-wide: anything else writing to the same"
                + " server during a run is counted too.");
        n.add("Commits: `pg_stat_database.xact_commit` difference for the current database, read only at phase"
                + " boundaries after the system has closed its connections (a backend flushes its counters when it"
                + " exits; PostgreSQL 15 otherwise holds them back for up to 10 s on an idle connection) and "
                + cfg.statsWaitMillis + " ms have passed. It includes the harness's own few statements per phase"
                + " (schema reset, snapshots, dead-tuple counts; listed as `harness_statements` in the JSON) and any"
                + " other session in the same database. `xids_per_job` counts only transactions that wrote.");
        n.add("Dead tuples: summed over the tables of the system's schema. `n_dead_tup` (the headline number) counts"
                + " dead tuples produced since the last vacuum; `pgstattuple` (when the extension can be created)"
                + " counts those still present, after page pruning. End-of-run counts are read after the system ran "
                + cfg.settleMillis + " ms idle (so its own maintenance, if any, had a chance) and closed. Counts taken"
                + " while a system is running (end of pin, end of recovery) lag by about a second.");
        n.add("The baseline has no LISTEN/NOTIFY: after an empty claim it sleeps " + cfg.baselinePollMs + " ms, so"
                + " its pickup latency is bounded by polling, and its idle polls show up in its commit count.");
        n.add("Steady and pinned: unless --steady-rate is given, each system runs at " + cfg.steadyLoad + " × its own"
                + " drain at the steady shape (W=" + cfg.steadyWorkers + ", " + cfg.steadyDelayMillis + " ms) from the"
                + " same round (its best drain of any shape when that drain did not run), so the two systems may run at"
                + " different absolute rates.");
        n.add("Pinned: throughput while pinned is compared with the clean steady run of the same system and round;"
                + " 'drained in recovery' means the backlog at the end of recovery was at most max(2 × W, 0.1 s of"
                + " load).");
        n.add("Latency in drain runs is measured from the moment the handlers were started (every job is already"
                + " committed), so pickup there is the time a job waited in the backlog: about half the drain time at"
                + " p50, it grows with the job count and shrinks with throughput. \"Handler start → durable"
                + " completion\" is the handler plus the completion path.");
        n.add("CPU per job: server = user + system time of the PostgreSQL backends connected to the bench database"
                + " (" + result.get("server_cpu_method") + "); cluster = every process of the server (WAL writer,"
                + " checkpointer and other sessions included); JVM = process CPU time of the JVM(s) running the system"
                + " (OperatingSystemMXBean; for in-JVM runs that includes the harness's producer and bookkeeping)."
                + " Drain: from the handlers' start to the last durable completion, divided by the jobs completed;"
                + " enqueue: the pre-enqueue. Steady: while the producer runs, divided by the jobs completed meanwhile.");
        n.add("Function server time (Riffle only): `pg_stat_user_functions.total_time` of `claim_ready`,"
                + " `complete_compact` and `enqueue_jobs` (including the functions they call), as a difference over"
                + " the phase, per claimed (RiffleStats.claimedJobs), completed or enqueued job; track_functions: "
                + result.get("track_functions") + ". Timing every PL/pgSQL call adds a little server time to Riffle"
                + " (the baseline calls no functions).");
        if (!cfg.profiles.isEmpty()) {
            n.add("Profiles: " + String.join("; ", cfg.profiles.stream()
                    .map(p -> p.describe(cfg.steadyWorkers, cfg.steadyDelayMillis)).toList())
                    + ". Profile drains pre-enqueue " + cfg.profileJobs + " jobs; the baseline gets the same shape (N"
                    + " instances of W workers, each instance with its own " + cfg.baselineClaimers + " claim and "
                    + cfg.baselineAckers + " ack connections). "
                    + (cfg.childWarmupJobs > 0
                            ? "Each child JVM warms up before its drain (`--child-warmup-jobs`; the warm-up line gives"
                                    + " its passes), as the harness JVM does (`--warmup-jobs`)."
                            : "A drain in child JVMs starts with a cold JIT (`--child-warmup-jobs 0`), a drain in the"
                                    + " harness JVM does not."));
        }
        n.add("Machine noise: the JVM (producer, handlers, drivers) and PostgreSQL share the same cores; absolute"
                + " numbers vary by tens of percent between runs, ratios of alternated runs much less. Use --rounds"
                + " for medians.");
        return n;
    }

    static Map<String, Object> machineFacts() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cores", Runtime.getRuntime().availableProcessors());
        m.put("cpu_model", cpuModel());
        m.put("memory", memTotal());
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " ("
                + System.getProperty("os.arch") + ")" + osRelease());
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + " ("
                + System.getProperty("java.vendor") + ")");
        m.put("max_heap_mb", Runtime.getRuntime().maxMemory() / (1024 * 1024));
        m.put("loadavg_start", loadavg());
        return m;
    }

    private static String readFirst(String path, String prefix) {
        try {
            for (String line : Files.readAllLines(Path.of(path))) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return null;
    }

    private static String cpuModel() {
        String l = readFirst("/proc/cpuinfo", "model name");
        return l == null ? "unknown" : l.substring(l.indexOf(':') + 1).trim();
    }

    private static String memTotal() {
        String l = readFirst("/proc/meminfo", "MemTotal:");
        if (l == null) {
            return "unknown";
        }
        long kb = Long.parseLong(l.replaceAll("[^0-9]", ""));
        return String.format(Locale.ROOT, "%.1f GiB", kb / 1024.0 / 1024.0);
    }

    private static String osRelease() {
        String l = readFirst("/etc/os-release", "PRETTY_NAME=");
        return l == null ? "" : ", " + l.substring("PRETTY_NAME=".length()).replace("\"", "");
    }

    static String loadavg() {
        try {
            String[] p = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return p[0] + " " + p[1] + " " + p[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }
}
