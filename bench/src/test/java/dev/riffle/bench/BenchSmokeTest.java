package dev.riffle.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Runs {@code BenchMain --smoke --profiles all} against the local database (RIFFLE_DATABASE_URL, else
 * 127.0.0.1:5432/test) so the benchmark cannot rot: the scenarios at smoke size and every profile with a few hundred
 * jobs (the {@code <N>x<W>} ones in child JVMs). It checks counts and the shape of the JSON only; it measures
 * nothing. Skip with {@code -Dbench.smoke.skip=true}.
 */
class BenchSmokeTest {

    private static final List<String> SYSTEMS = List.of("baseline", "riffle");
    private static final int PROFILE_JOBS = 200;

    /**
     * Runs {@code BenchMain} with {@code args} plus {@code --out target/<name>.json --write-docs target/<name>.md}
     * (both deleted first) and returns the parsed JSON.
     */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> runBench(String name, String... args) throws Exception {
        Path out = Path.of("target", name + ".json");
        Path docs = Path.of("target", name + ".md");
        Files.deleteIfExists(out);
        Files.deleteIfExists(docs);
        List<String> all = new java.util.ArrayList<>(List.of(args));
        all.addAll(List.of("--out", out.toString(), "--write-docs", docs.toString()));
        BenchMain.run(all.toArray(String[]::new), System.getenv());
        return (Map<String, Object>) Json.parse(Files.readString(out));
    }

    @Test
    @SuppressWarnings("unchecked")
    void smokeRunCompletesEveryJobOnBothSystemsAndWritesTheJson() throws Exception {
        assumeFalse(Boolean.getBoolean("bench.smoke.skip"), "bench.smoke.skip=true");
        Path docs = Path.of("target", "bench-smoke.md");
        Map<String, Object> json = runBench("bench-smoke", "--smoke", "--profiles", "all", "--profile-jobs",
                String.valueOf(PROFILE_JOBS));
        assertThat(json).containsKeys("format", "command", "started_at", "finished_at", "machine", "postgres",
                "config", "systems", "dead_tuple_method", "server_cpu_method", "track_functions", "runs", "summary",
                "targets", "notes");
        assertThat((Map<String, Object>) json.get("machine")).containsKeys("cores", "cpu_model", "memory", "os",
                "java", "loadavg_start", "loadavg_end");
        assertThat((Map<String, Object>) json.get("postgres")).containsKeys("version", "server_version",
                "synchronous_commit");
        assertThat((Map<String, Object>) json.get("systems")).containsOnlyKeys(SYSTEMS);
        // Every run starts after a CHECKPOINT; the test kit's role may checkpoint, so no note says it was skipped.
        assertThat(((Map<String, Object>) json.get("config")).get("checkpoint_before_runs")).isEqualTo(true);
        assertThat(json).doesNotContainKey("checkpoint_note");
        assertThat(Files.readString(docs)).contains("- Checkpoints: a `CHECKPOINT` after each run's schema reset");

        List<Object> runs = (List<Object>) json.get("runs");
        for (String system : SYSTEMS) {
            for (String scenario : List.of("drain", "steady", "pinned")) {
                assertThat(runs).as("%s %s run", system, scenario).anySatisfy(o -> {
                    Map<String, Object> r = (Map<String, Object>) o;
                    assertThat(r.get("system")).isEqualTo(system);
                    assertThat(r.get("scenario")).isEqualTo(scenario);
                });
            }
        }
        for (Object o : runs) {
            Map<String, Object> r = (Map<String, Object>) o;
            String what = r.get("system") + " " + r.get("key");
            assertThat(r.get("failed")).as(what + " failed").isNull();
            assertThat(r).as(what).containsKeys("round", "system", "scenario", "key", "params", "complete", "metrics",
                    "phases", "dead_tuples", "counters");
            assertThat(r.get("first_error")).as(what + " first error").isNull();
            assertThat(r.get("complete")).as(what + " drained completely").isEqualTo(true);
            Map<String, Object> m = (Map<String, Object>) r.get("metrics");
            long enqueued = ((Number) m.get("jobs_enqueued")).longValue();
            assertThat(enqueued).as(what + " jobs enqueued").isPositive();
            assertThat(((Number) m.get("jobs_completed")).longValue()).as(what + " jobs completed").isEqualTo(enqueued);
            assertThat(((Number) m.get("jobs_lost")).longValue()).as(what + " jobs lost").isZero();
            assertThat(((Number) m.get("errors")).longValue()).as(what + " errors").isZero();
            assertThat(m).as(what).containsKeys("enqueue_jobs_per_s", "completed_jobs_per_s", "dead_tuples_end",
                    "jobs_completed_twice", "pickup_p50_ms", "pickup_p95_ms", "pickup_p99_ms", "complete_p50_ms",
                    "complete_p95_ms", "complete_p99_ms");
            boolean profile = r.containsKey("profile");
            switch ((String) r.get("scenario")) {
                case "drain" -> {
                    assertThat(enqueued).isEqualTo(profile ? PROFILE_JOBS : 2_000);
                    assertThat(m).as(what).containsKeys("wal_bytes_per_job_enqueue", "wal_bytes_per_job_drain",
                            "wal_bytes_per_job_total", "commits_per_job_enqueue", "commits_per_job_drain",
                            "commits_per_job_total", "dead_tuples_after_enqueue", "server_cpu_us_per_job_drain",
                            "cluster_cpu_us_per_job_drain", "start_to_complete_p99_ms");
                    // server CPU needs a local server (/proc); the JVM's own CPU time is always there
                    assertThat(m.get("jvm_cpu_us_per_job_drain")).as(what + " JVM CPU").isNotNull();
                }
                case "steady" -> {
                    assertThat(m).as(what).containsKeys("rate_target", "wal_bytes_per_job", "commits_per_job",
                            "second_half_pickup_p99_ms", "second_half_completed_jobs_per_s",
                            "server_cpu_us_per_job", "jvm_cpu_us_per_job");
                    assertThat(m.get("jvm_cpu_us_per_job")).as(what + " JVM CPU").isNotNull();
                    // the per-second pickup timeline covers every job of the run, once
                    List<Map<String, Object>> seconds = (List<Map<String, Object>>) m.get("pickup_by_second");
                    assertThat(seconds).as(what + " pickup by second").isNotEmpty();
                    assertThat(seconds.stream().mapToLong(x -> ((Number) x.get("jobs")).longValue()).sum())
                            .as(what + " jobs in the timeline").isEqualTo(((Number) m.get("latency_samples")).longValue());
                    assertThat(((Number) m.get("pickup_worst_second_p99_ms")).doubleValue())
                            .as(what + " worst second").isEqualTo(seconds.stream()
                                    .filter(x -> x.get("pickup_p99_ms") != null)
                                    .mapToDouble(x -> ((Number) x.get("pickup_p99_ms")).doubleValue()).max().orElseThrow());
                }
                case "pinned" -> assertThat(m).as(what).containsKeys("pinned_completed_jobs_per_s",
                        "pinned_fraction_of_clean", "recovery_completed_jobs_per_s", "backlog_end_pinned",
                        "backlog_end_recovery", "drained_in_recovery", "dead_tuples_end_pinned",
                        "dead_tuples_end_recovery", "pinned_pickup_p99_ms");
                default -> throw new AssertionError("unexpected scenario " + r.get("scenario"));
            }
        }

        // every profile ran for both systems; NxW in child processes that all exited cleanly
        for (String system : SYSTEMS) {
            for (String p : List.of("1x32", "4x8", "1x32-jvm", "4x8-jvm", "w256", "steady-r500-w16", "steady-b50")) {
                assertThat(runs).as("%s profile %s", system, p).anySatisfy(o -> {
                    Map<String, Object> r = (Map<String, Object>) o;
                    assertThat(r.get("system")).isEqualTo(system);
                    assertThat(r.get("profile")).isEqualTo(p);
                    if (p.contains("x")) {
                        int n = Integer.parseInt(p.substring(0, p.indexOf('x')));
                        boolean inHarness = p.endsWith("-jvm");
                        assertThat((Map<String, Object>) r.get("fleet"))
                                .containsEntry("fleet", inHarness ? "jvm" : "process")
                                .containsEntry("instances", (long) n);
                        if (!inHarness) {
                            List<Object> procs =
                                    (List<Object>) ((Map<String, Object>) r.get("counters")).get("processes");
                            assertThat(procs).hasSize(n).allSatisfy(x ->
                                    assertThat((Map<String, Object>) x).containsEntry("exit_code", 0L));
                        }
                    }
                });
            }
        }
        // steady-r500-w16 (issue #12's steady case): both systems at 500 jobs/s with 16 handlers, whatever the
        // steady scenario's own rate and handlers
        for (String system : SYSTEMS) {
            assertThat(runs).as("%s steady-r500-w16", system).anySatisfy(o -> {
                Map<String, Object> r = (Map<String, Object>) o;
                assertThat(r.get("system")).isEqualTo(system);
                assertThat(r.get("profile")).isEqualTo("steady-r500-w16");
                Map<String, Object> params = (Map<String, Object>) r.get("params");
                assertThat(((Number) params.get("rate")).doubleValue()).isEqualTo(500.0);
                assertThat(((Number) params.get("workers")).intValue()).isEqualTo(16);
                assertThat(params.get("rate_source")).isEqualTo("fixed by the profile");
            });
        }
        assertThat((List<Object>) json.get("targets")).anySatisfy(o -> {
            Map<String, Object> t = (Map<String, Object>) o;
            assertThat(String.valueOf(t.get("target"))).startsWith("pickup p99 at 500 jobs/s, 16 handlers, whole run");
            assertThat(t.get("goal")).isEqualTo("<= 1.0");
            assertThat(t.get("status")).isIn("pass", "miss");
        });

        // steady-b50: one rate for both systems, half the baseline's drain peak at the steady shape (the smoke's
        // steady runs use W=16 and 1 ms, the shape of its drain scenario), not its peak over every shape
        List<Object> rates = runs.stream().map(o -> (Map<String, Object>) o)
                .filter(r -> "steady-b50".equals(r.get("profile")))
                .map(r -> ((Map<String, Object>) r.get("params")).get("rate")).distinct().toList();
        assertThat(rates).hasSize(1);
        double baselineSameShape = runs.stream().map(o -> (Map<String, Object>) o)
                .filter(r -> "baseline".equals(r.get("system")) && "drain W=16 delay=1ms".equals(r.get("key")))
                .mapToDouble(r -> ((Number) ((Map<String, Object>) r.get("metrics")).get("completed_jobs_per_s"))
                        .doubleValue())
                .findFirst().orElseThrow();
        assertThat(((Number) rates.get(0)).doubleValue()).isEqualTo(Math.max(1, Math.floor(baselineSameShape * 0.5)));
        assertThat(runs).anySatisfy(o -> assertThat(String.valueOf(((Map<String, Object>) ((Map<String, Object>) o)
                .getOrDefault("params", Map.of())).get("rate_source")))
                .contains("baseline drain peak at the steady shape").contains("drain W=16 delay=1ms"));

        // steady and pinned: each system at half its own drain in the steady shape (not its best drain of any shape,
        // which here is a W=256 profile)
        for (String system : SYSTEMS) {
            double ownSameShape = runs.stream().map(o -> (Map<String, Object>) o)
                    .filter(r -> system.equals(r.get("system")) && "drain W=16 delay=1ms".equals(r.get("key")))
                    .mapToDouble(r -> ((Number) ((Map<String, Object>) r.get("metrics")).get("completed_jobs_per_s"))
                            .doubleValue())
                    .findFirst().orElseThrow();
            for (String scenario : List.of("steady", "pinned")) {
                assertThat(runs).as("%s %s rate", system, scenario).anySatisfy(o -> {
                    Map<String, Object> r = (Map<String, Object>) o;
                    assertThat(r.get("system")).isEqualTo(system);
                    assertThat(r.get("key")).isEqualTo(scenario);
                    Map<String, Object> params = (Map<String, Object>) r.get("params");
                    assertThat(((Number) params.get("rate")).doubleValue())
                            .isEqualTo(Math.max(1, Math.floor(ownSameShape * 0.5)));
                    assertThat(String.valueOf(params.get("rate_source")))
                            .contains("own drain peak at the steady shape").contains("drain W=16 delay=1ms");
                });
            }
        }

        Map<String, Object> summary = (Map<String, Object>) json.get("summary");
        assertThat(summary).containsKeys("drain W=16 delay=1ms", "steady", "pinned", "profile 1x32 delay=1ms",
                "profile 4x8 delay=1ms", "profile 4x8-jvm delay=1ms", "profile W=256 delay=1ms", "profile steady-b50",
                "profile steady-r500-w16");
        for (Object e : summary.values()) {
            assertThat((Map<String, Object>) e).containsKeys("baseline", "riffle", "ratio_riffle_to_baseline");
        }
        assertThat((List<Object>) json.get("targets")).isNotEmpty();
        // the 4x8 diagnostics (not targets) are there, each the ratio of the two runs' completed jobs/s
        Map<String, Object> jvmPair = ((List<Object>) json.get("targets")).stream().map(o -> (Map<String, Object>) o)
                .filter(t -> String.valueOf(t.get("target")).startsWith("4x8-jvm against 1x32-jvm, delay=1ms"))
                .findFirst().orElseThrow();
        assertThat(jvmPair.get("status")).isEqualTo("info");
        double four = ((Number) ((Map<String, Object>) ((Map<String, Object>) summary.get("profile 4x8-jvm delay=1ms"))
                .get("riffle")).get("completed_jobs_per_s")).doubleValue();
        double one = ((Number) ((Map<String, Object>) ((Map<String, Object>) summary.get("profile 1x32-jvm delay=1ms"))
                .get("riffle")).get("completed_jobs_per_s")).doubleValue();
        assertThat(((Number) jvmPair.get("value")).doubleValue()).isCloseTo(four / one, org.assertj.core.api.Assertions.within(1e-5)); // the JSON keeps 6 decimals
        assertThat((List<Object>) json.get("targets")).anySatisfy(o -> assertThat(
                String.valueOf(((Map<String, Object>) o).get("target"))).startsWith("4x8 against 1x32, delay=1ms (baseline"));

        String md = Files.readString(docs);
        assertThat(md).contains(Report.BEGIN, Report.END, "### Machine", "### Targets (issue #12)", "PostgreSQL",
                "### profile 4x8 delay=1ms", "each in its own JVM process");
    }

    /**
     * docs/validation at toy size (a 3 s soak per system, 200-job profiles in the harness JVM, a 600-job crash with one
     * worker JVM): the verdict, the PNG and the CSVs are written, and every criterion's numbers come from the run
     * (the baseline, put through the same checks, must be flagged; the killed JVM's claims must be rescued).
     */
    @Test
    @SuppressWarnings("unchecked")
    void validationSmokeComputesEveryCriterionAndWritesVerdictAndPlot() throws Exception {
        assumeFalse(Boolean.getBoolean("bench.smoke.skip"), "bench.smoke.skip=true");
        Path out = Path.of("target", "validation-smoke");
        int crashJobs = 600;
        Map<String, Object> result = Validate.run(new String[] {"--soak-seconds", "3", "--sample-seconds", "0.5",
            "--soak-rate", "500", "--crash-jobs", String.valueOf(crashJobs), "--crash-instances", "1",
            "--crash-workers", "8", "--out", out.toString(), "--smoke", "--fleet", "jvm"},
                System.getenv());
        Path dir = Path.of((String) result.get("dir"));
        for (String f : List.of("verdict.md", "results.json", "soak-dead-tuples.csv", "soak-dead-tuples.png",
                "throughput.csv", "crash-timeline.csv")) {
            assertThat(dir.resolve(f)).as(f).isRegularFile();
        }
        java.awt.image.BufferedImage png = javax.imageio.ImageIO.read(dir.resolve("soak-dead-tuples.png").toFile());
        assertThat(png).isNotNull();
        assertThat(png.getWidth()).isEqualTo(1000);
        assertThat(Files.readString(dir.resolve("verdict.md"))).contains("# Validation verdict", "| 1 |", "| 2 |",
                "| 3 |", "| 4 |", "soak-dead-tuples.png");
        Map<String, Object> written = (Map<String, Object>) Json.parse(Files.readString(dir.resolve("results.json")));
        Map<String, Object> criteria = (Map<String, Object>) written.get("criteria");
        assertThat(criteria).containsOnlyKeys("1_no_frontier_table", "2_dead_tuples_soak", "3_throughput",
                "4_crash_recovery");
        for (Object c : criteria.values()) {
            assertThat(((Map<String, Object>) c).get("verdict")).isIn("PASS", "FAIL");
        }

        // 1: Riffle's runs checked table by table; the same check flags the baseline's UPDATE + DELETE job table
        Map<String, Object> c1 = (Map<String, Object>) criteria.get("1_no_frontier_table");
        assertThat(((Number) c1.get("riffle_runs_checked")).intValue()).isEqualTo(3); // 1x32, 4x8, soak
        assertThat(((Number) c1.get("riffle_tables_per_run")).longValue()).isGreaterThan(50);
        assertThat(((Number) c1.get("riffle_append_only_partitions_per_run")).longValue()).isGreaterThan(20);
        assertThat(c1.get("baseline_control_detected")).isEqualTo(true);
        assertThat((List<Object>) c1.get("baseline_tables_mutated_by_the_hot_path")).containsExactly("jobs");
        assertThat(c1.get("verdict")).isEqualTo("PASS");

        // 2: samples were taken for both systems; the baseline's DELETEs show up as dead tuples, closures stay clean
        Map<String, Object> systems = (Map<String, Object>) ((Map<String, Object>) criteria.get("2_dead_tuples_soak"))
                .get("systems");
        Map<String, Object> riffleSoak = (Map<String, Object>) systems.get("riffle");
        Map<String, Object> baselineSoak = (Map<String, Object>) systems.get("baseline");
        assertThat(((Number) riffleSoak.get("steady_samples")).intValue()).isPositive();
        assertThat(((Number) baselineSoak.get("steady_samples")).intValue()).isPositive();
        assertThat(((Number) baselineSoak.get("max_dead_schema_any_sample")).longValue()).isPositive();
        assertThat(((Number) riffleSoak.get("max_dead_closure_partitions")).longValue()).isZero();
        assertThat(Files.readAllLines(dir.resolve("soak-dead-tuples.csv"))).anyMatch(l -> l.startsWith("riffle,"))
                .anyMatch(l -> l.startsWith("baseline,"));

        // 3: both systems measured on each profile
        List<Object> rows = (List<Object>) ((Map<String, Object>) criteria.get("3_throughput")).get("rows");
        assertThat(rows).extracting(r -> ((Map<String, Object>) r).get("profile")).containsExactly(
                "profile 1x32 delay=1ms", "profile 4x8 delay=1ms", "profile soak");
        assertThat(rows).allSatisfy(r -> {
            Map<String, Object> row = (Map<String, Object>) r;
            assertThat(((Number) row.get("riffle_jobs_per_s")).doubleValue()).isPositive();
            assertThat(((Number) row.get("baseline_jobs_per_s")).doubleValue()).isPositive();
            assertThat(((Number) row.get("riffle_jobs_lost")).longValue()).isZero();
        });

        // 4: a worker JVM was killed holding claims, rescue closed them while prune ran, nothing lost or doubled
        Map<String, Object> c4 = (Map<String, Object>) criteria.get("4_crash_recovery");
        assertThat(((Number) c4.get("jobs_enqueued")).longValue()).isEqualTo(crashJobs);
        assertThat(((Number) c4.get("jobs_completed")).longValue()).isEqualTo(crashJobs);
        assertThat(((Number) c4.get("jobs_lost")).longValue()).isZero();
        assertThat(((Number) c4.get("duplicate_completions")).longValue()).isZero();
        assertThat(((Number) c4.get("stale_rescued")).longValue()).isPositive();
        assertThat(((Number) c4.get("pruned_slots_after_kill")).longValue()).isPositive();
        assertThat(c4.get("verdict")).isEqualTo("PASS");
    }

    /**
     * Child JVMs of a process profile warm up before they report ready (the smoke run above starts them cold): each
     * child reports the JIT's share of every pass and its compile time during the measured drain, the run's JSON keeps
     * them per process, and the report prints them.
     * A pass opens and closes an engine in a schema of its own; a child whose warm-up broke would fail the run.
     */
    @Test
    @SuppressWarnings("unchecked")
    void childJvmsWarmUpInPassesAndReportTheJitShareOfEach() throws Exception {
        assumeFalse(Boolean.getBoolean("bench.smoke.skip"), "bench.smoke.skip=true");
        Path docs = Path.of("target", "bench-child-warmup.md");
        Map<String, Object> json = runBench("bench-child-warmup", "--smoke", "--scenarios", "none", "--profiles", "2x4",
                "--profile-jobs", "300", "--child-warmup-jobs", "300");
        assertThat(((Map<String, Object>) json.get("config")).get("child_warmup_jobs")).isEqualTo(300L);
        List<Object> runs = (List<Object>) json.get("runs");
        for (String system : SYSTEMS) {
            assertThat(runs).as(system).anySatisfy(o -> {
                Map<String, Object> r = (Map<String, Object>) o;
                assertThat(r.get("system")).isEqualTo(system);
                assertThat(r.get("complete")).isEqualTo(true);
                List<Object> procs = (List<Object>) ((Map<String, Object>) r.get("counters")).get("processes");
                assertThat(procs).hasSize(2).allSatisfy(x -> {
                    List<Object> shares = (List<Object>) ((Map<String, Object>) x).get("warmup_jit_shares");
                    assertThat(shares).as("%s warm-up passes", system).isNotEmpty().hasSizeLessThanOrEqualTo(
                            JitSettle.MAX_PASSES);
                    assertThat(shares).allSatisfy(v -> assertThat(((Number) v).doubleValue()).isNotNegative());
                    // every pass but the last missed the rule, else the warm-up would have stopped there
                    for (Object v : shares.subList(0, shares.size() - 1)) {
                        assertThat(JitSettle.settled(((Number) v).doubleValue())).isFalse();
                    }
                    // and what the JIT still compiled while the drain was measured
                    assertThat(((Number) ((Map<String, Object>) x).get("drain_jit_s")).doubleValue())
                            .as("%s JIT in the drain", system).isNotNegative();
                });
            });
        }
        assertThat(Files.readString(docs)).contains("passes of each child and the JIT's share of its last pass:",
                "baseline profile 2x4 delay=1ms", "riffle profile 2x4 delay=1ms", "compiling in the measured drain");
    }

    @Test
    void warmupPassesAreReportedPerSystemWithTheJitShareOfEach() {
        Map<String, Object> result = Map.of("warmup", List.of(
                Map.of("system", "baseline", "pass", 1, "jit_share", 0.14),
                Map.of("system", "baseline", "pass", 2, "jit_share", 0.03),
                Map.of("system", "riffle", "pass", 1, "jit_share", 0.51)));
        assertThat(Report.warmupPasses(result))
                .isEqualTo(" (passes and the JIT's share of each: baseline 2, 14 %, 3 %; riffle 1, 51 %)");
        assertThat(Report.warmupPasses(Map.of())).isEmpty();
    }

    @Test
    @SuppressWarnings("unchecked")
    void jsonRoundTrips() {
        String text = Json.write(Map.of("a", List.of(1L, 2.5, "x\"y\n", true), "b", Map.of()));
        Map<String, Object> back = (Map<String, Object>) Json.parse(text);
        assertThat((List<Object>) back.get("a")).containsExactly(1L, 2.5, "x\"y\n", true);
        assertThat((Map<String, Object>) back.get("b")).isEmpty();
        assertThat(Payloads.seqOf(Payloads.args(123, 456, "pad"))).isEqualTo(123);
        assertThat(Payloads.seqOf("{\"p\": \"ab\", \"s\": 77, \"t\": 1}")).isEqualTo(77);
        assertThat(Json.parse(Json.compact(Map.of("a", List.of(1L, 2L))))).isEqualTo(Map.of("a", List.of(1L, 2L)));
    }

    @Test
    void profilesParse() {
        assertThat(Profile.parseList("all", "process")).extracting(Profile::name)
                .containsExactly("1x32", "4x8", "1x32-jvm", "4x8-jvm", "w256", "steady-r500-w16", "steady-b50");
        Profile inHarness = Profile.parse("4x8-jvm", "process");
        assertThat(inHarness.separateProcess()).isFalse();
        assertThat(inHarness.instances()).isEqualTo(4);
        assertThat(inHarness.key(1)).isEqualTo("profile 4x8-jvm delay=1ms");
        assertThat(Profile.parse("4x8", "process").separateProcess()).isTrue();
        Profile p = Profile.parse("4x8", "jvm");
        assertThat(p.instances()).isEqualTo(4);
        assertThat(p.workers()).isEqualTo(8);
        assertThat(p.separateProcess()).isFalse();
        assertThat(p.key(0)).isEqualTo("profile 4x8 delay=0ms");
        assertThat(Profile.parse("W=256", "process").key(1)).isEqualTo("profile W=256 delay=1ms");
        assertThat(Profile.parse("steady-b50", "process").baselineLoad()).isEqualTo(0.5);
        Profile fixed = Profile.parse("steady-r500-w16", "process");
        assertThat(fixed.steady()).isTrue();
        assertThat(fixed.fixedRate()).isEqualTo(500.0);
        assertThat(fixed.workers()).isEqualTo(16);
        assertThat(fixed.key(0)).isEqualTo("profile steady-r500-w16");
        assertThat(Profile.parse("steady-r2000", "process").workers()).as("the steady scenario's handlers").isZero();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Profile.parse("steady-r0", "process"))
                .isInstanceOf(BenchConfig.UsageException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Profile.parse("8by4", "process"))
                .isInstanceOf(BenchConfig.UsageException.class);
    }
}
