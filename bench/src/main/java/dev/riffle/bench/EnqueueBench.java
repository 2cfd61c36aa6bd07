package dev.riffle.bench;

import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Enqueue only (docs/bulk-enqueue.md): jobs/s and WAL bytes per job of the baseline's multi-row {@code INSERT}, Riffle's
 * multi-row array path ({@code copyEnqueueThreshold} 0) and Riffle's COPY path (threshold 1), one producer thread,
 * {@code --enqueue-batch} jobs per call. Each variant runs on a fresh schema: an unmeasured warm-up of a fifth of
 * {@code --jobs}, a {@code CHECKPOINT} (so every variant starts with the same full-page-image debt), then
 * {@code --jobs} measured. Variants alternate for {@code --rounds} rounds; the medians are printed. Takes the
 * harness's options ({@code --database}, {@code --jobs}, {@code --enqueue-batch}, {@code --rounds},
 * {@code --payload-pad}); the others are ignored.
 *
 * <pre>{@code java -cp <bench classpath> dev.riffle.bench.EnqueueBench --database riffle_bench --jobs 50000 --enqueue-batch 2000 --rounds 3}</pre>
 */
final class EnqueueBench {

    private EnqueueBench() {}

    private record Variant(String name, String system, int copyThreshold) {}

    private static final List<Variant> VARIANTS = List.of(
            new Variant("baseline multi-row INSERT", "baseline", 0),
            new Variant("riffle array path", "riffle", 0),
            new Variant("riffle COPY path", "riffle", 1));

    public static void main(String[] args) throws Exception {
        BenchConfig cfg = BenchConfig.parse(args, System.getenv());
        Monitor.useDatabase(cfg);
        String padding = Payloads.padding(cfg.payloadPad);
        Map<String, List<double[]>> results = new LinkedHashMap<>();
        try (Monitor mon = new Monitor(cfg)) {
            Connection admin = mon.connection();
            for (int round = 0; round < cfg.rounds; round++) {
                for (Variant v : VARIANTS) {
                    cfg.copyEnqueueThreshold = v.copyThreshold();
                    QueueSystem sys = v.system().equals("baseline") ? new BaselineSystem(cfg)
                            : (QueueSystem) Class.forName("dev.riffle.bench.RiffleSystem")
                                    .getDeclaredConstructor(BenchConfig.class).newInstance(cfg);
                    try {
                        sys.reset(admin);
                        sys.open();
                        enqueue(sys, Math.max(cfg.enqueueBatch, cfg.jobs / 5), cfg.enqueueBatch, padding, 0);
                        try (Statement st = admin.createStatement()) {
                            st.execute("CHECKPOINT");
                        }
                        Monitor.Snapshot before = mon.snapshot();
                        enqueue(sys, cfg.jobs, cfg.enqueueBatch, padding, 1L << 40);
                        Monitor.Snapshot after = mon.snapshot();
                        Map<String, Object> d = before.diff(after);
                        double seconds = (Double) d.get("seconds");
                        double[] r = {cfg.jobs / seconds, ((Long) d.get("wal_bytes")).doubleValue() / cfg.jobs};
                        results.computeIfAbsent(v.name(), k -> new ArrayList<>()).add(r);
                        System.out.printf(Locale.ROOT, "[round %d] %-26s %,9.0f jobs/s  %,6.0f WAL B/job%n",
                                round + 1, v.name(), r[0], r[1]);
                    } finally {
                        sys.close();
                    }
                }
            }
        }
        System.out.printf(Locale.ROOT, "%n%d jobs per run, batches of %d, 1 producer, medians of %d round(s)%n",
                cfg.jobs, cfg.enqueueBatch, cfg.rounds);
        System.out.println("| path | jobs/s enqueued | WAL bytes/job |");
        System.out.println("|---|---:|---:|");
        for (Map.Entry<String, List<double[]>> e : results.entrySet()) {
            System.out.printf(Locale.ROOT, "| %s | %,.0f | %,.0f |%n", e.getKey(), median(e.getValue(), 0),
                    median(e.getValue(), 1));
        }
    }

    private static void enqueue(QueueSystem sys, int n, int batch, String padding, long firstSeq) throws Exception {
        for (int from = 0; from < n; from += batch) {
            int to = Math.min(n, from + batch);
            List<QueueSystem.BenchJob> jobs = new ArrayList<>(to - from);
            long micros = Payloads.epochMicros();
            for (long s = firstSeq + from; s < firstSeq + to; s++) {
                jobs.add(new QueueSystem.BenchJob(s, micros, Payloads.args(s, micros, padding)));
            }
            sys.enqueue(jobs);
        }
    }

    private static double median(List<double[]> rs, int i) {
        double[] v = rs.stream().mapToDouble(r -> r[i]).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}
