package dev.riffle.bench;

import dev.riffle.engine.DatabaseUrl;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Command-line options. Every option has a default; {@code --smoke} switches the defaults to a run of seconds. */
final class BenchConfig {

    static final String DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test";

    DatabaseUrl url;
    String urlSource;
    /** The command line as given; {@link ProcessFleet} hands it to its children. */
    List<String> args = List.of();
    boolean smoke;
    List<String> systems = List.of("baseline", "riffle");
    List<String> scenarios = List.of("drain", "steady", "pinned");
    int jobs = 100_000;
    List<Integer> workers = List.of(16, 64);
    List<Integer> delaysMillis = List.of(0, 1);
    int rounds = 1;
    int steadySeconds = 30;
    double steadyRate = 0;
    double steadyLoad = 0.5;
    int steadyWorkers = 0;
    int steadyDelayMillis = 1;
    int pinnedSeconds = 30;
    int recoverySeconds = 30;
    int enqueueBatch = 500;
    int enqueueConcurrency = 2;
    // Riffle's RiffleConfig.copyEnqueueThreshold: batches of at least this many jobs are staged with COPY
    // (docs/bulk-enqueue.md); 0 keeps every batch on the multi-row array path.
    int copyEnqueueThreshold = dev.riffle.engine.RiffleConfig.DEFAULT_COPY_ENQUEUE_THRESHOLD;
    // Riffle's QueueConfig.withEnqueueShards for the bench queue; 0 keeps the schema's default for a new queue.
    int enqueueShards = 0;
    int claimBatch = 128;
    int ackBatch = 512;
    int ackWindowMillis = 2;
    int poolSize = 8;
    // Riffle's RiffleConfig.warmPool: open the pool in full at start and plan the hot path on each connection.
    boolean warmPool = dev.riffle.engine.RiffleConfig.DEFAULT_WARM_POOL;
    // Riffle's RiffleConfig.claimConcurrency: claims one subscription keeps in flight at once.
    int claimConcurrency = dev.riffle.engine.RiffleConfig.DEFAULT_CLAIM_CONCURRENCY;
    int baselineClaimers = 2;
    int baselineAckers = 1;
    int baselinePollMs = 10;
    int baselineVacuumSeconds = 0;
    int payloadPad = 32;
    int producerTickMillis = 10;
    int settleMillis = 3000;
    int statsWaitMillis = 1500;
    // A CHECKPOINT before each measured run (after the schema reset): every run starts with the same full-page-image
    // debt and none has a timed checkpoint running through it (the timer restarts; checkpoint_timeout is minutes).
    boolean checkpointBeforeRuns = true;
    int drainTimeoutSeconds = 600;
    boolean pgstattuple = true;
    boolean trackFunctions = true;
    String profilesText = "";
    List<Profile> profiles = List.of();
    int profileJobs = 0;
    /**
     * The least jobs a profile drain pre-enqueues when {@code --profile-jobs} is not given (and not {@code --smoke}).
     * A 50,000-job {@code 4x8} drain lasted under 2 s on a 2-core host: four child JVMs starting their claim loops and
     * compiling what the measured engine's open sent back to the interpreter (C2 threads 9-13 % of all CPU samples
     * during the drain, perf) were most of it. Session 19, Riffle alone, same host: {@code 4x8}/{@code 1x32} 0.71-0.82
     * at 50,000 jobs, 0.90-0.96 at 200,000.
     */
    static final int MIN_DEFAULT_PROFILE_JOBS = 200_000;
    // Jobs each system drains (W = 64, no work, unmeasured) before the first measured run, so that both are measured
    // with a JIT-compiled hot path, as in a long-running service. Riffle's path through Reactor, Netty and
    // r2dbc-postgresql is far more code than the baseline's JDBC loop: its first 20,000-job drain spent about a third
    // of the machine's CPU in the JIT compiler threads (perf, docs/benchmarks.md), and its JVM CPU per job fell about
    // 3x over four rounds. 20,000 was not enough (session 8, 100,000-job drains at W=64 after a 20,000-job warm-up,
    // three rounds in one JVM: Riffle 15,414 -> 18,656 -> 22,484 jobs/s, JVM CPU 56 -> 32 -> 26 us per job), so the
    // default is 100,000; the baseline gets the same. 0 measures cold.
    int warmupJobs = 100_000;
    // Each child JVM of a --fleet process profile drains this many jobs a pass, unmeasured, in a schema of its own
    // before it reports ready: otherwise 4x8 starts four cold JITs on two cores against one in 1x32. 0: children start
    // cold. Each pass opens and closes an engine (WorkerMain.warmUp), so a pass of 20,000 jobs was mostly lifecycle:
    // the children's last pass still compiled for 22-39 % with 50,000 (session 17).
    int childWarmupJobs = 50_000;
    String fleet = "process";
    String riffleApi = "work";
    List<String> childJvmArgs = List.of("-Xmx512m");
    String database;
    Path out = Path.of("bench-results", "latest.json");
    Path writeDocs;
    Path renderFrom;

    static String usage() {
        return String.join("\n",
                "Usage: BenchMain [options]",
                "  Database: RIFFLE_DATABASE_URL (r2dbc:postgresql://, postgresql://, postgres://, jdbc:postgresql://),",
                "            else " + DEFAULT_URL,
                "  --url <url>                  override RIFFLE_DATABASE_URL",
                "  --database <name>            run in this database on the same server, created if missing (keeps",
                "                               other sessions' commits out of pg_stat_database counts)",
                "  --smoke                      a run of seconds for CI: 2,000 jobs, W=16, 1 ms, steady/pinned/recovery 2 s",
                "  --systems baseline,riffle    which systems (alternated in this order, reversed every other round)",
                "  --scenarios drain,steady,pinned   or none (only --profiles)",
                "  --profiles 1x32,4x8,1x32-jvm,4x8-jvm,w256,steady-b50   extra shapes, run after the drain scenario"
                        + " (default none; 'all' = these six):",
                "                               <N>x<W>: N engine instances of W handlers on one queue, drain;",
                "                               <N>x<W>-jvm: the same, all instances in the harness JVM whatever --fleet;",
                "                               w<W>: drain with W handlers in the harness JVM;",
                "                               steady-b<P>: steady with both producers at P % of the baseline's drain peak",
                "                               at the steady W and handler delay (any shape if that drain did not run)",
                "  --profile-jobs N             jobs per profile drain run (default: --jobs, at least 200000; --smoke: --jobs)",
                "  --fleet process|jvm          <N>x<W> profiles: each instance its own JVM (default process) or all in",
                "                               the harness JVM",
                "  --child-jvm-args \"A B\"       JVM options of --fleet process children (default -Xmx512m)",
                "  --riffle-api work|subscribe  Riffle handler shape: riffle.work(Map.of(kind, handler), W, queue)"
                        + " (default) or",
                "                               subscribe(queue).flatMap(job -> [delay].then(job.complete()), W, 1)",
                "  --jobs N                     drain: jobs pre-enqueued per run (default 100000)",
                "  --workers 16,64              drain: handler concurrencies W",
                "  --delays-ms 0,1              drain: handler delays (0 = no work; else non-blocking delay)",
                "  --rounds R                   repeat everything R times; the summary takes the median (default 1)",
                "  --warmup-jobs N              before the first measured run, each system drains N jobs at W=64 for",
                "                               each measured handler delay, unmeasured, repeated until the JIT compiles",
                "                               for under 5 % of a pass (at most 5 passes), so both run JIT-compiled",
                "                               (default 100000; 0 = cold; --smoke: 0)",
                "  --child-warmup-jobs N        each child JVM of a process profile first drains N jobs at its own W,",
                "                               unmeasured, in its own schema, opening and closing an engine each pass,",
                "                               repeated like --warmup-jobs (default 50000; 0 = cold; --smoke: 0)",
                "  --steady-seconds S           steady: producer duration (default 30)",
                "  --steady-rate R              steady/pinned: fixed jobs/s for both systems (default: load x drain peak)",
                "  --steady-load F              steady/pinned: fraction of each system's drain at the steady W and delay (default 0.5)",
                "  --steady-workers W           steady/pinned: handler concurrency (default: largest --workers)",
                "  --steady-delay-ms D          steady/pinned: handler delay (default 1)",
                "  --pinned-seconds S           pinned: seconds with an idle-in-transaction xid held (default 30)",
                "  --recovery-seconds S         pinned: seconds of load after the release (default 30)",
                "  --enqueue-batch B            jobs per enqueue statement/call when pre-enqueuing (default 500)",
                "  --copy-enqueue-threshold N   Riffle stages batches of N jobs or more with COPY (default "
                        + dev.riffle.engine.RiffleConfig.DEFAULT_COPY_ENQUEUE_THRESHOLD + "; 0: never)",
                "  --enqueue-concurrency C      concurrent enqueue calls when pre-enqueuing (default 2)",
                "  --enqueue-shards N           Riffle: lanes per priority of the bench queue, 1-"
                        + dev.riffle.engine.api.QueueConfig.MAX_ENQUEUE_SHARDS + " (default: the schema's default"
                        + " for a new queue, 8)",
                "  --claim-batch N              max jobs per claim (both systems; default 128)",
                "  --ack-batch N                max jobs per ack/completion batch (both systems; default 512)",
                "  --ack-window-ms N            Riffle completionWindow (default 2)",
                "  --pool-size N                Riffle connection pool size (default 8)",
                "  --warm-pool true|false       Riffle RiffleConfig.warmPool: open and warm the whole pool at start (default "
                        + dev.riffle.engine.RiffleConfig.DEFAULT_WARM_POOL + ")",
                "  --claim-concurrency N        Riffle RiffleConfig.claimConcurrency: claims in flight per subscription,"
                        + " 1-64 (default " + dev.riffle.engine.RiffleConfig.DEFAULT_CLAIM_CONCURRENCY + ")",
                "  --baseline-claimers N        baseline claim threads/connections (default 2)",
                "  --baseline-ackers N          baseline ack threads/connections (default 1)",
                "  --baseline-poll-ms N         baseline sleep after an empty claim (default 10)",
                "  --baseline-vacuum-s N        baseline runs VACUUM on its table every N s while its workers run"
                        + " (default 0: rely on autovacuum)",
                "  --payload-pad N              padding characters in every job's args (default 32)",
                "  --producer-tick-ms N         steady/pinned: the producer commits what is due every N ms (default 10)",
                "  --settle-ms N                wait after draining, system still running, before counting dead tuples"
                        + " (default 3000)",
                "  --stats-wait-ms N            wait after closing a system before reading pg_stat counters (default 1500)",
                "  --checkpoint-before-runs true|false  CHECKPOINT before each measured run, after its schema reset"
                        + " (default true; needs superuser or pg_checkpoint, else skipped with a note)",
                "  --drain-timeout-s N          give up waiting for a drain after N seconds (default 600)",
                "  --no-pgstattuple             count dead tuples from pg_stat_user_tables only",
                "  --no-track-functions         do not ALTER DATABASE ... SET track_functions = 'pl' for the run (no"
                        + " per-function server time)",
                "  --out <file>                 JSON results (default bench-results/latest.json)",
                "  --write-docs <file>          also write the Markdown report (e.g. docs/benchmarks.md)",
                "  --render <json>              do not run; render an earlier JSON file (stdout table, --write-docs)",
                "  --help");
    }

    /** {@code --key=value} as {@code [--key, value]}; anything else as {@code [arg, null]}. */
    static String[] splitFlag(String arg) {
        int eq = arg.indexOf('=');
        return arg.startsWith("--") && eq > 0 ? new String[] {arg.substring(0, eq), arg.substring(eq + 1)}
                : new String[] {arg, null};
    }

    static BenchConfig parse(String[] args, Map<String, String> env) {
        BenchConfig c = new BenchConfig();
        List<String> a = new ArrayList<>(Arrays.asList(args));
        c.args = List.copyOf(a);
        if (a.contains("--smoke")) {
            c.applySmokeDefaults();
        }
        String url = null;
        for (int i = 0; i < a.size(); i++) {
            String[] kv = splitFlag(a.get(i));
            String k = kv[0];
            String v = kv[1];
            switch (k) {
                case "--smoke" -> c.smoke = true;
                case "--no-pgstattuple" -> c.pgstattuple = false;
                case "--no-track-functions" -> c.trackFunctions = false;
                case "--help", "-h" -> throw new UsageException(usage());
                default -> {
                    if (!k.startsWith("--")) {
                        throw new UsageException("unexpected argument: " + k + "\n" + usage());
                    }
                    if (v == null) {
                        if (i + 1 >= a.size()) {
                            throw new UsageException("missing value for " + k);
                        }
                        v = a.get(++i);
                    }
                    try {
                        c.set(k, v);
                    } catch (NumberFormatException e) {
                        throw new UsageException("bad number for " + k + ": " + v);
                    }
                    if (k.equals("--url")) {
                        url = v;
                    }
                }
            }
        }
        if (url != null) {
            c.urlSource = "--url";
        } else if (env.get("RIFFLE_DATABASE_URL") != null && !env.get("RIFFLE_DATABASE_URL").isBlank()) {
            url = env.get("RIFFLE_DATABASE_URL");
            c.urlSource = "RIFFLE_DATABASE_URL";
        } else {
            url = DEFAULT_URL;
            c.urlSource = "default";
        }
        try {
            c.url = DatabaseUrl.parse(url);
        } catch (IllegalArgumentException e) {
            throw new UsageException(e.getMessage());
        }
        c.validate();
        return c;
    }

    private void applySmokeDefaults() {
        smoke = true;
        jobs = 2_000;
        workers = List.of(16);
        delaysMillis = List.of(1);
        steadySeconds = 2;
        pinnedSeconds = 2;
        recoverySeconds = 2;
        settleMillis = 300;
        statsWaitMillis = 300;
        drainTimeoutSeconds = 60;
        warmupJobs = 0;
        childWarmupJobs = 0;
        out = Path.of("bench-results", "smoke.json");
    }

    private void set(String k, String v) {
        switch (k) {
            case "--url" -> { }
            case "--database" -> database = v;
            case "--systems" -> systems = words(v, List.of("baseline", "riffle"));
            case "--scenarios" -> scenarios = v.trim().equalsIgnoreCase("none") ? List.of()
                    : words(v, List.of("drain", "steady", "pinned"));
            case "--jobs" -> jobs = Integer.parseInt(v.replace("_", ""));
            case "--workers" -> workers = ints(v);
            case "--delays-ms" -> delaysMillis = ints(v);
            case "--rounds" -> rounds = Integer.parseInt(v);
            case "--steady-seconds" -> steadySeconds = Integer.parseInt(v);
            case "--steady-rate" -> steadyRate = Double.parseDouble(v);
            case "--steady-load" -> steadyLoad = Double.parseDouble(v);
            case "--steady-workers" -> steadyWorkers = Integer.parseInt(v);
            case "--steady-delay-ms" -> steadyDelayMillis = Integer.parseInt(v);
            case "--pinned-seconds" -> pinnedSeconds = Integer.parseInt(v);
            case "--recovery-seconds" -> recoverySeconds = Integer.parseInt(v);
            case "--enqueue-batch" -> enqueueBatch = Integer.parseInt(v);
            case "--enqueue-concurrency" -> enqueueConcurrency = Integer.parseInt(v);
            case "--copy-enqueue-threshold" -> copyEnqueueThreshold = Integer.parseInt(v);
            case "--enqueue-shards" -> enqueueShards = Integer.parseInt(v);
            case "--claim-batch" -> claimBatch = Integer.parseInt(v);
            case "--ack-batch" -> ackBatch = Integer.parseInt(v);
            case "--ack-window-ms" -> ackWindowMillis = Integer.parseInt(v);
            case "--pool-size" -> poolSize = Integer.parseInt(v);
            case "--warm-pool" -> warmPool = parseBoolean(v);
            case "--claim-concurrency" -> claimConcurrency = Integer.parseInt(v);
            case "--baseline-claimers" -> baselineClaimers = Integer.parseInt(v);
            case "--baseline-ackers" -> baselineAckers = Integer.parseInt(v);
            case "--baseline-poll-ms" -> baselinePollMs = Integer.parseInt(v);
            case "--baseline-vacuum-s" -> baselineVacuumSeconds = Integer.parseInt(v);
            case "--payload-pad" -> payloadPad = Integer.parseInt(v);
            case "--producer-tick-ms" -> producerTickMillis = Integer.parseInt(v);
            case "--settle-ms" -> settleMillis = Integer.parseInt(v);
            case "--stats-wait-ms" -> statsWaitMillis = Integer.parseInt(v);
            case "--checkpoint-before-runs" -> checkpointBeforeRuns = parseBoolean(v);
            case "--drain-timeout-s" -> drainTimeoutSeconds = Integer.parseInt(v);
            case "--profiles" -> profilesText = v;
            case "--profile-jobs" -> profileJobs = Integer.parseInt(v.replace("_", ""));
            case "--warmup-jobs" -> warmupJobs = Integer.parseInt(v.replace("_", ""));
            case "--child-warmup-jobs" -> childWarmupJobs = Integer.parseInt(v.replace("_", ""));
            case "--fleet" -> fleet = words(v, List.of("process", "jvm")).get(0);
            case "--riffle-api" -> riffleApi = words(v, List.of("work", "subscribe")).get(0);
            case "--child-jvm-args" -> childJvmArgs = v.isBlank() ? List.of() : List.of(v.trim().split("\\s+"));
            case "--out" -> out = Path.of(v);
            case "--write-docs" -> writeDocs = Path.of(v);
            case "--render" -> renderFrom = Path.of(v);
            default -> throw new UsageException("unknown option: " + k + "\n" + usage());
        }
    }

    private void validate() {
        if (jobs < 1 || rounds < 1 || enqueueBatch < 1 || enqueueConcurrency < 1 || claimBatch < 1 || ackBatch < 1
                || poolSize < 1 || claimConcurrency < 1 || claimConcurrency > 64 || baselineClaimers < 1
                || baselineAckers < 1 || workers.isEmpty()
                || delaysMillis.isEmpty() || steadySeconds < 1 || pinnedSeconds < 1 || recoverySeconds < 1
                || steadyLoad <= 0 || payloadPad < 0 || baselinePollMs < 0 || baselineVacuumSeconds < 0 || producerTickMillis < 1
                || copyEnqueueThreshold < 0 || enqueueShards < 0 || enqueueShards > dev.riffle.engine.api.QueueConfig.MAX_ENQUEUE_SHARDS) {
            throw new UsageException("option out of range\n" + usage());
        }
        if (enqueueBatch * 4 > 32_000) {
            throw new UsageException("--enqueue-batch at most 8000 (the baseline binds 4 parameters per row)");
        }
        if (profileJobs < 0 || warmupJobs < 0 || childWarmupJobs < 0) {
            throw new UsageException("option out of range\n" + usage());
        }
        if (profileJobs == 0) {
            profileJobs = smoke ? jobs : Math.max(jobs, MIN_DEFAULT_PROFILE_JOBS);
        }
        profiles = Profile.parseList(profilesText, fleet);
        if (steadyWorkers == 0) {
            steadyWorkers = workers.stream().mapToInt(Integer::intValue).max().orElse(16);
        }
    }

    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("database", url.r2dbcUrl());
        m.put("database_source", urlSource + (database != null ? " + --database " + database : ""));
        m.put("smoke", smoke);
        m.put("systems", new ArrayList<Object>(systems));
        m.put("scenarios", new ArrayList<Object>(scenarios));
        m.put("jobs", jobs);
        m.put("workers", new ArrayList<Object>(workers));
        m.put("delays_ms", new ArrayList<Object>(delaysMillis));
        m.put("rounds", rounds);
        m.put("steady_seconds", steadySeconds);
        m.put("steady_rate_fixed", steadyRate > 0 ? steadyRate : null);
        m.put("steady_load", steadyLoad);
        m.put("steady_workers", steadyWorkers);
        m.put("steady_delay_ms", steadyDelayMillis);
        m.put("pinned_seconds", pinnedSeconds);
        m.put("recovery_seconds", recoverySeconds);
        m.put("enqueue_batch", enqueueBatch);
        m.put("enqueue_concurrency", enqueueConcurrency);
        m.put("copy_enqueue_threshold", copyEnqueueThreshold);
        m.put("enqueue_shards", enqueueShards);
        m.put("warm_pool", warmPool);
        m.put("claim_concurrency", claimConcurrency);
        m.put("claim_batch", claimBatch);
        m.put("ack_batch", ackBatch);
        m.put("ack_window_ms", ackWindowMillis);
        m.put("riffle_pool_size", poolSize);
        m.put("baseline_claimers", baselineClaimers);
        m.put("baseline_ackers", baselineAckers);
        m.put("baseline_poll_ms", baselinePollMs);
        m.put("baseline_vacuum_s", baselineVacuumSeconds);
        m.put("payload_pad", payloadPad);
        m.put("producer_tick_ms", producerTickMillis);
        m.put("settle_ms", settleMillis);
        m.put("stats_wait_ms", statsWaitMillis);
        m.put("checkpoint_before_runs", checkpointBeforeRuns);
        List<Object> ps = new ArrayList<>();
        for (Profile p : profiles) {
            ps.add(p.name());
        }
        m.put("profiles", ps);
        m.put("profile_jobs", profileJobs);
        m.put("warmup_jobs", warmupJobs);
        m.put("child_warmup_jobs", childWarmupJobs);
        m.put("fleet", fleet);
        m.put("child_jvm_args", new ArrayList<Object>(childJvmArgs));
        m.put("riffle_api", riffleApi);
        m.put("track_functions", trackFunctions);
        return m;
    }

    private static boolean parseBoolean(String v) {
        return switch (v) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException("expected true or false, got " + v);
        };
    }

    private static List<String> words(String v, List<String> allowed) {
        List<String> out = new ArrayList<>();
        for (String w : v.split(",")) {
            String t = w.trim().toLowerCase(Locale.ROOT);
            if (t.isEmpty()) {
                continue;
            }
            if (!allowed.contains(t)) {
                throw new UsageException("unknown value " + t + " (allowed: " + allowed + ")");
            }
            out.add(t);
        }
        if (out.isEmpty()) {
            throw new UsageException("empty list: " + v);
        }
        return List.copyOf(out);
    }

    private static List<Integer> ints(String v) {
        List<Integer> out = new ArrayList<>();
        for (String w : v.split(",")) {
            if (!w.isBlank()) {
                out.add(Integer.parseInt(w.trim()));
            }
        }
        return List.copyOf(out);
    }

    /** A bad command line; the message is meant for the user. */
    static final class UsageException extends RuntimeException {
        UsageException(String msg) {
            super(msg);
        }
    }
}
