package dev.riffle.bench;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The {@code verdict.md} of a validation run ({@link Validate}): PASS/FAIL per criterion, with its numbers. */
final class VerdictReport {

    private VerdictReport() {
    }

    @SuppressWarnings("unchecked")
    static String markdown(Map<String, Object> result) {
        Map<String, Object> criteria = (Map<String, Object>) result.get("criteria");
        Map<String, Object> c1 = (Map<String, Object>) criteria.get("1_no_frontier_table");
        Map<String, Object> c2 = (Map<String, Object>) criteria.get("2_dead_tuples_soak");
        Map<String, Object> c3 = (Map<String, Object>) criteria.get("3_throughput");
        Map<String, Object> c4 = (Map<String, Object>) criteria.get("4_crash_recovery");
        Map<String, Object> machine = (Map<String, Object>) result.get("machine");
        Map<String, Object> pg = (Map<String, Object>) result.get("postgres");
        Map<String, Object> opts = (Map<String, Object>) result.get("options");
        StringBuilder b = new StringBuilder();
        b.append("# Validation verdict: ").append(Boolean.TRUE.equals(result.get("all_pass")) ? "PASS" : "FAIL")
                .append("\n\n");
        b.append("`").append(result.get("command")).append("`, ").append(result.get("started_at")).append(" to ")
                .append(result.get("finished_at")).append(".\n");
        b.append("Machine: ").append(machine.get("cores")).append(" cores (").append(machine.get("cpu_model"))
                .append("), load average ").append(machine.get("loadavg_start")).append(" at the start, ")
                .append(machine.get("loadavg_end")).append(" at the end; PostgreSQL ").append(pg.get("server_version"))
                .append(", autovacuum=").append(pg.get("autovacuum")).append(", ")
                .append(pg.get("client_backends_at_start")).append(" client backends at the start.\n\n");

        b.append("| # | Criterion | Verdict | Numbers |\n|---|---|---|---|\n");
        b.append("| 1 | No mutable frontier table | ").append(c1.get("verdict")).append(" | ")
                .append(String.format(Locale.ROOT, "%s Riffle runs, %,d jobs: frontier-named relations %s, tables"
                                + " mutated by the hot path %s, UPDATE+DELETE on %s append-only partitions: %s; worst"
                                + " table %s at %.5f mutations/job; control: baseline flagged %s |\n",
                        c1.get("riffle_runs_checked"), ((Number) c1.get("riffle_jobs_checked")).longValue(),
                        c1.get("riffle_frontier_named_relations"), c1.get("riffle_tables_mutated_by_the_hot_path"),
                        c1.get("riffle_append_only_partitions_per_run"), c1.get("riffle_append_only_updates_deletes"),
                        c1.get("riffle_max_mutations_table"),
                        ((Number) c1.get("riffle_max_mutations_per_job")).doubleValue(),
                        c1.get("baseline_tables_mutated_by_the_hot_path")));
        Map<String, Object> systems = (Map<String, Object>) c2.get("systems");
        Map<String, Object> r2 = (Map<String, Object>) systems.getOrDefault("riffle", Map.of());
        Map<String, Object> b2 = (Map<String, Object>) systems.get("baseline");
        b.append("| 2 | Steady dead tuples <= ").append(c2.get("limit_schema"))
                .append(" across the schema, 0 on closure partitions | ").append(c2.get("verdict")).append(" | ")
                .append(String.format(Locale.ROOT, "Riffle: steady max %s (mean %s, %s samples), closure partitions"
                                + " max %s%s |\n", r2.get("steady_max_dead_schema"),
                        Report.fmt(r2.get("steady_mean_dead_schema"), "d0"), r2.get("steady_samples"),
                        r2.get("max_dead_closure_partitions"),
                        b2 == null ? "" : "; baseline: steady max " + b2.get("steady_max_dead_schema")));
        StringBuilder t = new StringBuilder();
        for (Object o : (List<Object>) c3.get("rows")) {
            Map<String, Object> row = (Map<String, Object>) o;
            if (t.length() > 0) {
                t.append("; ");
            }
            t.append(((String) row.get("profile")).replace("profile ", "")).append(" ");
            if (row.containsKey("riffle_kept_up")) {
                t.append(String.format(Locale.ROOT, "kept up %.2f", ((Number) row.get("riffle_kept_up")).doubleValue()));
                if (row.get("ratio") != null) {
                    t.append(String.format(Locale.ROOT, " (%.2fx baseline)", ((Number) row.get("ratio")).doubleValue()));
                }
            } else {
                t.append(row.get("ratio") == null ? "-" : String.format(Locale.ROOT, "%.2fx",
                        ((Number) row.get("ratio")).doubleValue()));
            }
        }
        b.append("| 3 | Throughput on 1x32, 4x8 and the soak, beside the baseline | ").append(c3.get("verdict"))
                .append(" | riffle/baseline completed jobs/s: ").append(t).append(" |\n");
        b.append("| 4 | Crash under load recovers; rescue beside prune | ").append(c4.get("verdict")).append(" | ")
                .append(String.format(Locale.ROOT, "%s enqueued, %s completed, %s lost, %s duplicate completions,"
                                + " %s rescued, %s slots pruned after the kill, recovered in %s s |\n",
                        c4.get("jobs_enqueued"), c4.get("jobs_completed"), c4.get("jobs_lost"),
                        c4.get("duplicate_completions"), c4.get("stale_rescued"), c4.get("pruned_slots_after_kill"),
                        Report.fmt(c4.get("recovery_seconds"), "d2")));

        b.append("\n## 1. No mutable frontier table\n\n");
        b.append("Checked after every Riffle run (the schema is created fresh for each run, so its table statistics"
                + " cover exactly that run): no relation whose name matches `").append(Validate.FRONTIER_NAMES)
                .append("`; no table with UPDATE + DELETE >= ").append(Validate.MUTATIONS_PER_JOB_LIMIT)
                .append(" per completed job; no UPDATE or DELETE at all on the rings' append-only partitions. The"
                        + " baseline's runs go through the same check as a control; it must flag the baseline's job"
                        + " table.\n\n");
        b.append("| System | Run | Jobs | Tables | UPDATE+DELETE on append-only partitions | Tables updated or deleted"
                + " (per job) | Frontier found |\n|---|---|---:|---:|---:|---|---|\n");
        for (Object o : (List<Object>) result.get("frontier_checks")) {
            Map<String, Object> c = (Map<String, Object>) o;
            StringBuilder tables = new StringBuilder();
            for (Object x : (List<Object>) c.get("tables_updated_or_deleted")) {
                Map<String, Object> tt = (Map<String, Object>) x;
                if (tables.length() > 0) {
                    tables.append(", ");
                }
                tables.append(tt.get("table")).append(String.format(Locale.ROOT, " %.4f",
                        ((Number) tt.get("mutations_per_job")).doubleValue()));
            }
            b.append("| ").append(c.get("system")).append(" | ").append(c.get("run")).append(" | ")
                    .append(c.get("jobs")).append(" | ").append(c.get("tables_checked")).append(" | ")
                    .append(c.get("append_only_partition_updates_deletes")).append(" | ")
                    .append(tables.length() == 0 ? "none" : tables).append(" | ").append(c.get("frontier_found"))
                    .append(" |\n");
        }

        b.append("\n## 2. Dead tuples during the soak\n\n");
        b.append(String.format(Locale.ROOT, "Producer at %s jobs/s for %s s per system, W=%s, %s ms handler;"
                        + " `n_dead_tup` sampled every %s s. Steady window: from min(60 s, 10 %%) after the producer's"
                        + " start to its stop. ![dead tuples](soak-dead-tuples.png)\n\n",
                Report.fmt(opts.get("soak_rate"), "int"), opts.get("soak_seconds"), opts.get("soak_workers"),
                opts.get("soak_delay_ms"), opts.get("sample_seconds")));
        b.append("| System | Samples (steady) | Steady max, schema | Steady mean | Max, any sample | Max on closure"
                + " partitions | Worst table at the steady max |\n|---|---:|---:|---:|---:|---:|---|\n");
        for (Map.Entry<String, Object> e : systems.entrySet()) {
            Map<String, Object> s = (Map<String, Object>) e.getValue();
            b.append("| ").append(e.getKey()).append(" | ").append(s.get("samples")).append(" (")
                    .append(s.get("steady_samples")).append(") | ").append(s.get("steady_max_dead_schema")).append(" | ")
                    .append(Report.fmt(s.get("steady_mean_dead_schema"), "d0")).append(" | ")
                    .append(s.get("max_dead_schema_any_sample")).append(" | ")
                    .append(s.get("max_dead_closure_partitions")).append(" | ")
                    .append(s.getOrDefault("steady_worst_table", "-")).append(" |\n");
        }

        b.append("\n## 3. Throughput\n\n| Profile | Baseline jobs/s | Riffle jobs/s | Riffle / baseline | Rule | Pass"
                + " |\n|---|---:|---:|---:|---|---|\n");
        for (Object o : (List<Object>) c3.get("rows")) {
            Map<String, Object> row = (Map<String, Object>) o;
            b.append("| ").append(row.get("profile")).append(" | ")
                    .append(Report.fmt(row.get("baseline_jobs_per_s"), "int")).append(" | ")
                    .append(Report.fmt(row.get("riffle_jobs_per_s"), "int")).append(" | ")
                    .append(row.get("ratio") == null ? "-" : String.format(Locale.ROOT, "%.2fx",
                            ((Number) row.get("ratio")).doubleValue()))
                    .append(" | ").append(row.get("rule"))
                    .append(row.containsKey("riffle_kept_up") ? String.format(Locale.ROOT, " (kept up %.2f)",
                            ((Number) row.get("riffle_kept_up")).doubleValue()) : "")
                    .append(" | ").append(row.get("pass")).append(" |\n");
        }

        b.append("\n## 4. Crash under load\n\n");
        b.append(String.format(Locale.ROOT, "%s worker JVMs of %s handlers plus a survivor engine (the maintenance"
                        + " leader: rescue, rotation and prune every %s ms, staleAfter %s ms) drain %s jobs; instance 0"
                        + " gets SIGKILL once %s of them are done. Counts from the completion tables under `terminal_jobs`; timeline in"
                        + " `crash-timeline.csv`.\n\n", opts.get("crash_instances"), opts.get("crash_workers"),
                opts.get("maintenance_tick_ms"), opts.get("stale_after_ms"), opts.get("crash_jobs"),
                opts.get("kill_after")));
        b.append("| Count | Value |\n|---|---:|\n");
        for (String k : List.of("jobs_enqueued", "jobs_completed", "jobs_lost", "duplicate_completions",
                "harness_completed_twice", "dlq_or_failed", "open_attempts_before_kill", "completed_at_kill",
                "stale_rescued", "completed_on_a_later_attempt", "rejected_completions", "pruned_slots_total",
                "pruned_slots_kill_to_done", "pruned_slots_after_kill", "first_rescue_after_kill_s", "last_rescue_after_kill_s",
                "recovery_seconds", "doctor_ok")) {
            Object v = c4.get(k);
            b.append("| ").append(k).append(" | ").append(v instanceof Double ? Report.fmt(v, "d2") : v)
                    .append(" |\n");
        }
        if (!((List<Object>) c4.get("failures")).isEmpty()) {
            b.append("\nFailures: ").append(c4.get("failures")).append("\n");
        }
        return b.toString();
    }
}
