package dev.riffle.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Renders a result tree as the stdout table and as the generated part of the Markdown page. */
final class Report {

    static final String BEGIN = "<!-- BEGIN GENERATED BENCH RESULTS: written by `BenchMain --write-docs`; edit outside"
            + " these markers -->";
    static final String END = "<!-- END GENERATED BENCH RESULTS -->";

    private Report() {
    }

    private record Row(String metric, String label, String fmt) {
    }

    private static final List<Row> DRAIN = List.of(
            new Row("enqueue_jobs_per_s", "enqueue jobs/s", "int"),
            new Row("completed_jobs_per_s", "completed jobs/s", "int"),
            new Row("pickup_p50_ms", "pickup p50 (ms from drain start)", "d2"),
            new Row("pickup_p95_ms", "pickup p95 (ms from drain start)", "d2"),
            new Row("pickup_p99_ms", "pickup p99 (ms from drain start)", "d2"),
            new Row("complete_p50_ms", "durable completion p50 (ms from drain start)", "d2"),
            new Row("complete_p95_ms", "durable completion p95 (ms from drain start)", "d2"),
            new Row("complete_p99_ms", "durable completion p99 (ms from drain start)", "d2"),
            new Row("start_to_complete_p50_ms", "handler start → durable completion p50 (ms)", "d2"),
            new Row("start_to_complete_p99_ms", "handler start → durable completion p99 (ms)", "d2"),
            new Row("wal_bytes_per_job_enqueue", "WAL bytes/job, enqueue", "d0"),
            new Row("wal_bytes_per_job_drain", "WAL bytes/job, drain", "d0"),
            new Row("wal_bytes_per_job_total", "WAL bytes/job, enqueue+drain", "d0"),
            new Row("commits_per_job_enqueue", "commits/job, enqueue", "d4"),
            new Row("commits_per_job_drain", "commits/job, drain", "d4"),
            new Row("commits_per_job_total", "commits/job, enqueue+drain", "d4"),
            new Row("server_cpu_us_per_job_drain", "server CPU µs/job, drain (bench backends)", "d0"),
            new Row("cluster_cpu_us_per_job_drain", "server CPU µs/job, drain (whole cluster)", "d0"),
            new Row("jvm_cpu_us_per_job_drain", "JVM CPU µs/job, drain", "d0"),
            new Row("server_cpu_us_per_job_enqueue", "server CPU µs/job, enqueue (bench backends)", "d0"),
            new Row("claim_ready_us_per_claimed_job", "claim_ready server µs per claimed job", "d0"),
            new Row("complete_compact_us_per_completed_job", "complete_compact server µs per completed job", "d0"),
            new Row("enqueue_jobs_us_per_job", "enqueue_jobs server µs per enqueued job", "d0"),
            new Row("dead_tuples_after_enqueue", "dead tuples after enqueue", "int"),
            new Row("dead_tuples_end", "dead tuples at end (n_dead_tup)", "int"),
            new Row("dead_tuples_end_exact", "dead tuples at end (pgstattuple)", "int"),
            new Row("dead_tuples_per_job", "dead tuples per completed job", "d2"),
            new Row("jobs_lost", "jobs lost", "int"),
            new Row("jobs_completed_twice", "jobs completed twice", "int"));

    private static final List<Row> STEADY = List.of(
            new Row("rate_target", "producer rate (jobs/s)", "int"),
            new Row("enqueue_jobs_per_s", "enqueue jobs/s", "int"),
            new Row("completed_jobs_per_s", "completed jobs/s", "int"),
            new Row("pickup_p50_ms", "pickup p50 (ms)", "d2"),
            new Row("pickup_p95_ms", "pickup p95 (ms)", "d2"),
            new Row("pickup_p99_ms", "pickup p99 (ms)", "d2"),
            new Row("pickup_max_ms", "pickup max (ms)", "d2"),
            new Row("complete_p50_ms", "durable completion p50 (ms)", "d2"),
            new Row("complete_p95_ms", "durable completion p95 (ms)", "d2"),
            new Row("complete_p99_ms", "durable completion p99 (ms)", "d2"),
            new Row("second_half_pickup_p50_ms", "pickup p50, second half of the load (ms)", "d2"),
            new Row("second_half_pickup_p99_ms", "pickup p99, second half of the load (ms)", "d2"),
            new Row("pickup_worst_second_p99_ms", "pickup p99 of the worst second (by commit time; ms)", "d2"),
            new Row("second_half_complete_p99_ms", "durable completion p99, second half (ms)", "d2"),
            new Row("second_half_completed_jobs_per_s", "completed jobs/s, second half", "int"),
            new Row("wal_bytes_per_job", "WAL bytes/job", "d0"),
            new Row("commits_per_job", "commits/job", "d4"),
            new Row("server_cpu_us_per_job", "server CPU µs/job (bench backends)", "d0"),
            new Row("cluster_cpu_us_per_job", "server CPU µs/job (whole cluster)", "d0"),
            new Row("jvm_cpu_us_per_job", "JVM CPU µs/job", "d0"),
            new Row("claim_ready_us_per_claimed_job", "claim_ready server µs per claimed job", "d0"),
            new Row("complete_compact_us_per_completed_job", "complete_compact server µs per completed job", "d0"),
            new Row("dead_tuples_end", "dead tuples at end (n_dead_tup)", "int"),
            new Row("dead_tuples_end_exact", "dead tuples at end (pgstattuple)", "int"),
            new Row("jobs_lost", "jobs lost", "int"));

    private static final List<Row> PINNED = List.of(
            new Row("rate_target", "producer rate (jobs/s)", "int"),
            new Row("pinned_completed_jobs_per_s", "completed jobs/s while pinned", "int"),
            new Row("pinned_fraction_of_clean", "… as a fraction of clean steady", "d2"),
            new Row("recovery_completed_jobs_per_s", "completed jobs/s in recovery", "int"),
            new Row("recovery_fraction_of_clean", "… as a fraction of clean steady", "d2"),
            new Row("pinned_pickup_p99_ms", "pickup p99 while pinned (ms)", "d2"),
            new Row("pinned_complete_p99_ms", "durable completion p99 while pinned (ms)", "d2"),
            new Row("recovery_pickup_p99_ms", "pickup p99 in recovery (ms)", "d2"),
            new Row("backlog_end_pinned", "backlog at end of pin", "int"),
            new Row("backlog_end_recovery", "backlog at end of recovery", "int"),
            new Row("drained_in_recovery", "backlog drained in recovery", "bool"),
            new Row("dead_tuples_end_pinned", "dead tuples at end of pin (n_dead_tup)", "int"),
            new Row("dead_tuples_end_pinned_exact", "dead tuples at end of pin (pgstattuple)", "int"),
            new Row("dead_tuples_end_recovery", "dead tuples at end of recovery (n_dead_tup)", "int"),
            new Row("dead_tuples_end_recovery_exact", "dead tuples at end of recovery (pgstattuple)", "int"),
            new Row("dead_tuples_end", "dead tuples at end (n_dead_tup)", "int"),
            new Row("dead_tuples_end_exact", "dead tuples at end (pgstattuple)", "int"),
            new Row("wal_bytes_per_job", "WAL bytes/job", "d0"),
            new Row("commits_per_job", "commits/job", "d4"),
            new Row("jobs_lost", "jobs lost", "int"));

    /** The rows of a summary entry, by its scenario (older JSON files have none: by its key). */
    private static List<Row> rowsFor(String key, Map<String, Object> entry) {
        Object scenario = entry.get("scenario");
        String s = scenario != null ? String.valueOf(scenario) : key.startsWith("drain") ? "drain" : key;
        if (s.equals("drain")) {
            return DRAIN;
        }
        return s.equals("pinned") ? PINNED : STEADY;
    }

    // ------------------------------------------------------------------------------------------------ stdout

    @SuppressWarnings("unchecked")
    static String table(Map<String, Object> result) {
        StringBuilder sb = new StringBuilder();
        Map<String, Object> summary = (Map<String, Object>) result.get("summary");
        for (var e : summary.entrySet()) {
            Map<String, Object> entry = (Map<String, Object>) e.getValue();
            Map<String, Object> b = (Map<String, Object>) entry.get("baseline");
            Map<String, Object> r = (Map<String, Object>) entry.get("riffle");
            Map<String, Object> ratio = (Map<String, Object>) entry.get("ratio_riffle_to_baseline");
            sb.append('\n').append("== ").append(e.getKey());
            Object rounds = entry.get("rounds");
            if (rounds instanceof Number n && n.intValue() > 1) {
                sb.append("  (median of ").append(n).append(" rounds)");
            }
            sb.append('\n');
            sb.append(String.format(Locale.ROOT, "%-42s %14s %14s %10s%n", "metric", "baseline", "riffle",
                    "riffle/base"));
            for (Row row : rowsFor(e.getKey(), entry)) {
                Object bv = b == null ? null : b.get(row.metric);
                Object rv = r == null ? null : r.get(row.metric);
                if (bv == null && rv == null) {
                    continue;
                }
                Object q = ratio == null ? null : ratio.get(row.metric);
                sb.append(String.format(Locale.ROOT, "%-42s %14s %14s %10s%n", row.label, fmt(bv, row.fmt),
                        fmt(rv, row.fmt), q == null ? "" : fmt(q, "d2") + "x"));
            }
        }
        List<Object> targets = (List<Object>) result.get("targets");
        if (targets != null && !targets.isEmpty()) {
            sb.append("\n== targets (issue #12)\n");
            for (Object o : targets) {
                Map<String, Object> t = (Map<String, Object>) o;
                sb.append(String.format(Locale.ROOT, "%-5s %-78s goal %-28s measured %s%n", t.get("status"),
                        t.get("target"), t.get("goal"), fmtTarget(t)));
            }
        }
        return sb.toString();
    }

    private static String fmtTarget(Map<String, Object> t) {
        Object v = t.get("value");
        if (v == null) {
            return "-";
        }
        if (v instanceof Boolean bool) {
            return bool ? "yes" : "no";
        }
        String unit = String.valueOf(t.getOrDefault("unit", ""));
        boolean integral = v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue());
        return fmt(v, integral && unit.isEmpty() ? "int" : "d2")
                + ("x".equals(unit) ? "x" : unit.isEmpty() ? "" : " " + unit);
    }

    static String fmt(Object v, String f) {
        if (v == null) {
            return "-";
        }
        if (v instanceof Boolean b) {
            return b ? "yes" : "no";
        }
        if (!(v instanceof Number n)) {
            return String.valueOf(v);
        }
        double d = n.doubleValue();
        return switch (f) {
            case "int" -> String.format(Locale.ROOT, "%,d", Math.round(d));
            case "d0" -> String.format(Locale.ROOT, "%,.0f", d);
            case "d2" -> String.format(Locale.ROOT, "%.2f", d);
            case "d4" -> String.format(Locale.ROOT, "%.4f", d);
            default -> String.valueOf(v);
        };
    }

    // ---------------------------------------------------------------------------------------------- Markdown

    @SuppressWarnings("unchecked")
    static String markdown(Map<String, Object> result) {
        StringBuilder sb = new StringBuilder();
        Map<String, Object> machine = (Map<String, Object>) result.get("machine");
        Map<String, Object> pg = (Map<String, Object>) result.get("postgres");
        Map<String, Object> config = (Map<String, Object>) result.get("config");
        sb.append(BEGIN).append("\n\n");
        sb.append("## Latest results\n\n");
        sb.append("Generated ").append(result.get("finished_at")).append(" by\n\n```\n")
                .append(result.get("command")).append("\n```\n\n");
        if (Boolean.TRUE.equals(config.get("smoke"))) {
            sb.append("**This is a smoke run** (a few seconds, tiny job counts): its numbers show that the benchmark"
                    + " works, not how fast anything is.\n\n");
        }
        sb.append("### Machine\n\n| | |\n|---|---|\n");
        row(sb, "Date (UTC)", result.get("finished_at"));
        row(sb, "CPU", machine.get("cpu_model") + " — " + machine.get("cores") + " cores visible to the JVM");
        row(sb, "Memory", machine.get("memory"));
        row(sb, "OS", machine.get("os"));
        row(sb, "Java", machine.get("java"));
        row(sb, "PostgreSQL", pg.get("version"));
        row(sb, "PostgreSQL settings", "synchronous_commit=" + pg.get("synchronous_commit") + ", fsync="
                + pg.get("fsync") + ", full_page_writes=" + pg.get("full_page_writes") + ", shared_buffers="
                + pg.get("shared_buffers") + ", autovacuum=" + pg.get("autovacuum") + " (naptime "
                + pg.get("autovacuum_naptime") + ")");
        row(sb, "Load average before / after", machine.get("loadavg_start") + " / " + machine.get("loadavg_end"));
        row(sb, "Other client backends at start", pg.get("client_backends_at_start"));
        row(sb, "Dead-tuple counting", result.get("dead_tuple_method"));
        if (result.containsKey("server_cpu_method")) {
            row(sb, "Server CPU", result.get("server_cpu_method"));
            row(sb, "track_functions", result.get("track_functions"));
        }
        sb.append('\n');

        Map<String, Object> systems = (Map<String, Object>) result.get("systems");
        sb.append("### Configuration\n\n");
        Object scenarios = config.get("scenarios");
        sb.append("- Scenarios: ").append(scenarios instanceof List<?> l && l.isEmpty() ? "none (profiles only; the"
                + " drain and steady settings below apply to the profiles)" : scenarios).append(".\n");
        sb.append("- Jobs per drain run: ").append(fmt(config.get("jobs"), "int")).append("; handler concurrency W: ")
                .append(config.get("workers")).append("; handler delays (ms): ").append(config.get("delays_ms"))
                .append("; rounds: ").append(config.get("rounds")).append(".\n");
        Object warmup = config.get("warmup_jobs");
        sb.append("- Warm-up: ").append(warmup instanceof Number n && n.intValue() > 0
                ? "each system first drained " + fmt(warmup, "int") + " jobs at W=64 for each measured handler delay"
                        + " (drain delays and the steady delay), unmeasured, in the harness JVM (`--warmup-jobs`), and"
                        + " repeated that pass until the JIT compiled for less than "
                        + Math.round(JitSettle.SETTLED * 100) + " % of it (at most " + JitSettle.MAX_PASSES
                        + " passes), so the measured runs use a JIT-compiled hot path" + warmupPasses(result)
                : "none (`--warmup-jobs 0`): the first runs include JIT compilation").append(".");
        Object childWarmup = config.get("child_warmup_jobs");
        sb.append(childWarmup instanceof Number n && n.intValue() > 0
                ? " Each child JVM of a process profile first drained " + fmt(childWarmup, "int") + " jobs at its own W"
                        + " and handler delay, unmeasured, in a schema of its own (`--child-warmup-jobs`), with an"
                        + " engine opened and closed in every pass as in the measured run, and repeated that pass under the"
                        + " same rule" + childWarmupPasses(result)
                : " Child JVMs of process profiles start cold (`--child-warmup-jobs 0`)").append(".\n");
        sb.append("- Steady: ").append(config.get("steady_seconds")).append(" s at ")
                .append(config.get("steady_rate_fixed") != null ? fmt(config.get("steady_rate_fixed"), "int")
                        + " jobs/s for both systems" : fmt(config.get("steady_load"), "d2")
                        + " × each system's own drain at the steady W and handler delay")
                .append(", W=").append(config.get("steady_workers")).append(", ").append(config.get("steady_delay_ms"))
                .append(" ms handler. Pinned: ").append(config.get("pinned_seconds")).append(" s with an idle-in-transaction")
                .append(" xid held, then ").append(config.get("recovery_seconds")).append(" s of recovery at the same rate.\n");
        sb.append("- Checkpoints: ").append(Boolean.FALSE.equals(config.get("checkpoint_before_runs"))
                ? "none forced (`--checkpoint-before-runs false`): a timed checkpoint may run through any run"
                : "a `CHECKPOINT` after each run's schema reset, before its clock starts, so every run starts with the"
                        + " same full-page-image debt and no timed checkpoint runs through it").append(".\n");
        profileLines(sb, result, config);
        for (var e : systems.entrySet()) {
            sb.append("- `").append(e.getKey()).append("`: ");
            Map<String, Object> d = (Map<String, Object>) e.getValue();
            List<String> parts = new ArrayList<>();
            for (var f : d.entrySet()) {
                parts.add(f.getKey() + "=" + f.getValue());
            }
            sb.append(String.join("; ", parts)).append('\n');
        }
        sb.append('\n');

        List<Object> targets = (List<Object>) result.get("targets");
        if (targets != null && !targets.isEmpty()) {
            sb.append("### Targets (issue #12)\n\n| Target | Goal | Measured | Status |\n|---|---|---|---|\n");
            for (Object o : targets) {
                Map<String, Object> t = (Map<String, Object>) o;
                sb.append("| ").append(t.get("target")).append(" | ").append(t.get("goal")).append(" | ")
                        .append(fmtTarget(t)).append(" | ").append(t.get("status")).append(" |\n");
            }
            sb.append('\n');
        }

        Map<String, Object> summary = (Map<String, Object>) result.get("summary");
        for (var e : summary.entrySet()) {
            Map<String, Object> entry = (Map<String, Object>) e.getValue();
            Map<String, Object> b = (Map<String, Object>) entry.get("baseline");
            Map<String, Object> r = (Map<String, Object>) entry.get("riffle");
            Map<String, Object> ratio = (Map<String, Object>) entry.get("ratio_riffle_to_baseline");
            sb.append("### ").append(e.getKey()).append("\n\n");
            sb.append("| Metric | Baseline | Riffle | Riffle / baseline |\n|---|---:|---:|---:|\n");
            for (Row row : rowsFor(e.getKey(), entry)) {
                Object bv = b == null ? null : b.get(row.metric);
                Object rv = r == null ? null : r.get(row.metric);
                if (bv == null && rv == null) {
                    continue;
                }
                Object q = ratio == null ? null : ratio.get(row.metric);
                sb.append("| ").append(row.label).append(" | ").append(fmt(bv, row.fmt)).append(" | ")
                        .append(fmt(rv, row.fmt)).append(" | ").append(q == null ? "" : fmt(q, "d2") + "×")
                        .append(" |\n");
            }
            sb.append('\n');
        }

        sb.append("### Dead tuples per table at the end of each run\n\n");
        sb.append("`n_dead_tup` is PostgreSQL's statistics counter (dead tuples produced since the last vacuum);"
                + " \"pgstattuple\" counts the dead tuples still present (page pruning removes some without a vacuum)."
                + " Tables with no dead tuples by either count are summarised per run.\n\n");
        sb.append("| Run | System | Table | n_dead_tup | pgstattuple | vacuums |\n|---|---|---|---:|---:|---:|\n");
        for (Object o : (List<Object>) result.get("runs")) {
            Map<String, Object> run = (Map<String, Object>) o;
            Map<String, Object> dead = (Map<String, Object>) run.get("dead_tuples");
            Map<String, Object> end = dead == null ? null : (Map<String, Object>) dead.get("end");
            if (end == null) {
                continue;
            }
            String runName = run.get("key") + " (round " + run.get("round") + ")";
            Map<String, Object> tables = (Map<String, Object>) end.get("tables");
            int clean = 0;
            for (var t : tables.entrySet()) {
                Map<String, Object> tm = (Map<String, Object>) t.getValue();
                if (tm.containsKey("partitioned_parent")) {
                    continue;
                }
                Double a = Summary.num(tm.get("n_dead_tup"));
                Double b = Summary.num(tm.get("dead_exact"));
                if ((a == null || a == 0) && (b == null || b == 0)) {
                    clean++;
                    continue;
                }
                sb.append("| ").append(runName).append(" | ").append(run.get("system")).append(" | ").append(t.getKey())
                        .append(" | ").append(fmt(tm.get("n_dead_tup"), "int")).append(" | ")
                        .append(fmt(tm.get("dead_exact"), "int")).append(" | ").append(fmt(tm.get("vacuums"), "int"))
                        .append(" |\n");
            }
            if (clean > 0) {
                sb.append("| ").append(runName).append(" | ").append(run.get("system")).append(" | ").append(clean)
                        .append(clean == 1 ? " other table" : " other tables").append(" | 0 | 0 | |\n");
            }
        }
        sb.append('\n');

        sb.append("### How to read these numbers\n\n");
        for (Object n : (List<Object>) result.get("notes")) {
            sb.append("- ").append(n).append('\n');
        }
        sb.append('\n').append(END).append('\n');
        return sb.toString();
    }

    /** One line per profile: its shape and where it ran; for steady-b profiles the rate both systems got. */
    @SuppressWarnings("unchecked")
    private static void profileLines(StringBuilder sb, Map<String, Object> result, Map<String, Object> config) {
        Object ps = config.get("profiles");
        if (!(ps instanceof List<?> names) || names.isEmpty()) {
            return;
        }
        String fleet = String.valueOf(config.get("fleet"));
        int steadyWorkers = Summary.num(config.get("steady_workers")).intValue();
        int steadyDelay = Summary.num(config.get("steady_delay_ms")).intValue();
        sb.append("- Profiles (").append(fmt(config.get("profile_jobs"), "int"))
                .append(" jobs per profile drain; the baseline gets the same shape):\n");
        for (Object n : names) {
            Profile p = Profile.parse(String.valueOf(n), fleet);
            sb.append("  - ").append(p.describe(steadyWorkers, steadyDelay));
            if (p.separateProcess()) {
                sb.append(" (child JVM options ").append(config.get("child_jvm_args")).append(")");
            }
            if (p.steady()) {
                for (Object o : (List<Object>) result.get("runs")) {
                    Map<String, Object> run = (Map<String, Object>) o;
                    Map<String, Object> params = (Map<String, Object>) run.get("params");
                    if (p.name().equals(run.get("profile")) && params != null) {
                        sb.append("; round ").append(run.get("round")).append(": ")
                                .append(fmt(params.get("rate"), "int")).append(" jobs/s = ")
                                .append(params.get("rate_source"));
                        break;
                    }
                }
            }
            sb.append('\n');
        }
    }

    private static void row(StringBuilder sb, String k, Object v) {
        sb.append("| ").append(k).append(" | ").append(v == null ? "-" : v).append(" |\n");
    }

    /** Replaces the generated block of an existing page, or writes a new page around it. */
    static void writeDocs(Path path, Map<String, Object> result) throws IOException {
        String block = markdown(result);
        String page;
        if (Files.exists(path)) {
            String old = Files.readString(path);
            int b = old.indexOf(BEGIN);
            int e = old.indexOf(END);
            if (b >= 0 && e > b) {
                page = old.substring(0, b) + block + old.substring(e + END.length()).replaceFirst("^\\n", "");
            } else {
                page = old.stripTrailing() + "\n\n" + block;
            }
        } else {
            page = intro() + block;
        }
        if (path.toAbsolutePath().getParent() != null) {
            Files.createDirectories(path.toAbsolutePath().getParent());
        }
        Files.writeString(path, page);
    }

    private static String intro() {
        return String.join("\n",
                "# Benchmarks",
                "",
                "The `bench/` module runs Riffle and an in-repo baseline side by side against one PostgreSQL database, in",
                "one invocation, alternating the two systems run by run so that drift on the machine hits both. The",
                "baseline is a minimal job table on plain JDBC: batched multi-row `INSERT`, batched claim by",
                "`UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED LIMIT n) RETURNING`, batched ack by",
                "`DELETE … WHERE id = ANY(?)`, and a 10 ms poll when the queue is empty.",
                "",
                "Scenarios:",
                "",
                "- **drain**: pre-enqueue N jobs, then drain them with W concurrent handlers; the handler does nothing",
                "  or waits 1 ms without blocking a thread.",
                "- **steady**: a producer at a fixed rate (by default half of the system's own drain at the same W and",
                "  handler delay); latency is measured from the enqueue commit to the handler start (pickup) and to the",
                "  durable completion.",
                "- **pinned**: the steady load while a second connection holds an idle-in-transaction xid",
                "  (`BEGIN; SELECT txid_current();`), then a recovery phase at the same load after releasing it.",
                "",
                "Profiles (`--profiles 1x32,4x8,1x32-jvm,4x8-jvm,w256,steady-b50` or `all`): N engine instances of W handlers",
                "on one queue (`<N>x<W>`, each in its own JVM unless `--fleet jvm`; `<N>x<W>-jvm`: all in the harness JVM),",
                "W handlers in the harness JVM (`w<W>`), and steady with both producers at P % of the baseline's drain peak",
                "at the steady run's W and handler delay (`steady-b<P>`). The `-jvm` pair and the baseline's own `4x8`",
                "against `1x32` are printed as diagnostics under the targets: they split the `4x8` ratio into what one",
                "shared queue costs in the database and what four JVMs cost on the machine.",
                "",
                "## Running it",
                "",
                "```",
                "mvn -B -q -pl bench -o install -DskipTests          # once the engine is installed",
                "mvn -B -q -pl bench exec:java -Dexec.args=\"--write-docs docs/benchmarks.md\"     # full run, updates this page",
                "mvn -B -q -pl bench exec:java -Dexec.args=\"--smoke\"                              # seconds; what CI runs",
                "mvn -B -q -pl bench exec:java -Dexec.args=\"--help\"                               # every flag",
                "```",
                "",
                "The database comes from `RIFFLE_DATABASE_URL` (`r2dbc:postgresql://`, `postgresql://`, `postgres://` or",
                "`jdbc:postgresql://`), else `postgresql://postgres@127.0.0.1:5432/test`. Results go to",
                "`bench-results/latest.json` (every number, per run) and to stdout. `--render <json> --write-docs <md>`",
                "re-renders this page from an earlier JSON file without running anything. Everything between the",
                "markers below is rewritten by `--write-docs`; text outside them is kept.",
                "",
                "");
    }

    /**
     * " (passes of each child and the JIT's share of its last pass: riffle profile 4x8 delay=0ms 5, 21-39 %; ...)"
     * from the process profiles' runs ({@link ProcessFleet} records each child's passes), or "" without any.
     */
    @SuppressWarnings("unchecked")
    static String childWarmupPasses(Map<String, Object> result) {
        if (!(result.get("runs") instanceof List<?> runs)) {
            return "";
        }
        List<String> parts = new java.util.ArrayList<>();
        for (Object o : runs) {
            Map<String, Object> r = (Map<String, Object>) o;
            if (!(r.get("counters") instanceof Map<?, ?> counters)
                    || !(counters.get("processes") instanceof List<?> procs) || procs.isEmpty()) {
                continue;
            }
            java.util.IntSummaryStatistics passes = new java.util.IntSummaryStatistics();
            java.util.LongSummaryStatistics last = new java.util.LongSummaryStatistics();
            double drainJit = 0;
            double drainCpu = 0;
            boolean drainKnown = true;
            for (Object po : procs) {
                Map<String, Object> proc = (Map<String, Object>) po;
                if (proc.get("warmup_jit_shares") instanceof List<?> shares && !shares.isEmpty()) {
                    passes.accept(shares.size());
                    if (shares.get(shares.size() - 1) instanceof Number n) {
                        last.accept(Math.round(n.doubleValue() * 100));
                    }
                }
                if (proc.get("drain_jit_s") instanceof Number j && proc.get("jvm_cpu_s") instanceof Number c) {
                    drainJit += j.doubleValue();
                    drainCpu += c.doubleValue();
                } else {
                    drainKnown = false;
                }
            }
            if (passes.getCount() > 0) {
                parts.add(r.get("system") + " " + r.get("key") + " " + range(passes.getMin(), passes.getMax())
                        + (last.getCount() > 0 ? ", " + range(last.getMin(), last.getMax()) + " %" : "")
                        + (drainKnown ? String.format(java.util.Locale.ROOT,
                                ", then %.2f s compiling in the measured drain against %.2f s of their CPU",
                                drainJit, drainCpu) : ""));
            }
        }
        return parts.isEmpty() ? ""
                : " (passes of each child and the JIT's share of its last pass: " + String.join("; ", parts) + ")";
    }

    private static String range(long min, long max) {
        return min == max ? String.valueOf(min) : min + "–" + max;
    }

    /** " (passes: baseline 3, JIT 14 %, 13 %, 2 %; ...)" from the results' warm-up record, or "" without one. */
    @SuppressWarnings("unchecked")
    static String warmupPasses(Map<String, Object> result) {
        if (!(result.get("warmup") instanceof List<?> passes) || passes.isEmpty()) {
            return "";
        }
        Map<String, List<String>> bySystem = new java.util.LinkedHashMap<>();
        for (Object o : passes) {
            Map<String, Object> p = (Map<String, Object>) o;
            Object share = p.get("jit_share");
            bySystem.computeIfAbsent(String.valueOf(p.get("system")), k -> new java.util.ArrayList<>())
                    .add(share instanceof Number n ? Math.round(n.doubleValue() * 100) + " %" : "?");
        }
        StringBuilder b = new StringBuilder(" (passes and the JIT's share of each: ");
        bySystem.forEach((sys, shares) -> b.append(b.charAt(b.length() - 2) == ':' ? "" : "; ").append(sys)
                .append(' ').append(shares.size()).append(", ").append(String.join(", ", shares)));
        return b.append(')').toString();
    }
}
