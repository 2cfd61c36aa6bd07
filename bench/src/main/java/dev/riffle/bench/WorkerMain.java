package dev.riffle.bench;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * One engine instance of a {@code --fleet process} profile, in its own JVM, started by {@link ProcessFleet}:
 * {@code WorkerMain <baseline|riffle> <instance> <workers> <delay-ms> <the harness's command line…>}.
 *
 * <p>It talks to the harness in JSON lines: on stdout it writes {@code ready} (connected; with its
 * {@link System#nanoTime()} so the harness can check that both JVMs read the same monotonic clock), {@code go}
 * (handlers started; process CPU and JIT compile time so far), {@code events} every {@value #FLUSH_MILLIS} ms
 * (handler starts and durable completions as flat {@code [seq, nanoTime, seq, nanoTime, …]} arrays), {@code error},
 * {@code cpu} (process CPU and JIT compile time) and {@code done} (its counters) and finally {@code closed}. On
 * stdin it reads one command a line: {@code start}, {@code mark} (report process CPU), {@code stop} (stop the
 * handlers, report, close every connection, exit). End of stdin means the harness is gone: it closes and exits.
 * Logging and anything else printed go to stderr.
 */
public final class WorkerMain {

    static final int FLUSH_MILLIS = 10;

    private static final Object OUT_LOCK = new Object();
    private static PrintStream protocol;

    private WorkerMain() {
    }

    /** Entry point of a child process; see the class comment for the arguments. */
    public static void main(String[] argv) throws Exception {
        protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (argv.length < 4) {
            throw new IllegalArgumentException("usage: WorkerMain <baseline|riffle> <instance> <workers> <delay-ms>"
                    + " <bench args...>");
        }
        String system = argv[0];
        int instance = Integer.parseInt(argv[1]);
        int workers = Integer.parseInt(argv[2]);
        Duration delay = Duration.ofMillis(Integer.parseInt(argv[3]));
        BenchConfig cfg = BenchConfig.parse(Arrays.copyOfRange(argv, 4, argv.length), System.getenv());
        if (cfg.database != null) {
            cfg.url = cfg.url.withDatabase(cfg.database);
        }
        QueueSystem sys = system.equals("baseline") ? new BaselineSystem(cfg) : new RiffleSystem(cfg);
        Events events = new Events(protocol);
        int code = 0;
        try {
            List<Object> warmupShares = cfg.childWarmupJobs > 0
                    ? warmUp(system, instance, workers, delay, cfg) : List.of();
            sys.open();
            emit(map("type", "ready", "instance", instance, "pid", ProcessHandle.current().pid(),
                    "nanos", System.nanoTime(), "warmup_jit_shares", warmupShares));
            code = serve(sys, workers, delay, events);
        } catch (Exception | LinkageError e) {
            emit(map("type", "error", "message", "instance " + instance + ": " + e));
            e.printStackTrace();
            code = 2;
        } finally {
            sys.close();
            emit(map("type", "closed"));
        }
        System.exit(code);
    }

    /**
     * Drains {@code cfg.childWarmupJobs} jobs with this instance's handler count and handler delay, unmeasured, in a
     * schema of its own (dropped afterwards), and repeats that pass until the JIT settled ({@link JitSettle}), so the
     * measured run starts JIT-compiled like the harness's own runs. One pass without handler work used to be all, and
     * the children of a 1 ms profile then compiled during the measurement.
     *
     * <p>Each pass goes through the whole lifecycle the measured run goes through: schema reset, engine open, drain,
     * workers stopped, engine closed. With one engine open across every pass, the close of the warm-up engine and the
     * open of the measured one sent hundreds of the drain's compiled methods back to the interpreter (speculative
     * type checks failing on the close and open paths, JFR {@code jdk.Deoptimization}), and a child that had settled
     * under 5 % then compiled for over half of its CPU in the measured drain. The JIT share is taken over the whole
     * pass, so recompilation that a close or an open causes counts against the next pass.
     *
     * @return the JIT's share of each pass, in order (null entries where this JVM does not report it): the harness
     *         puts them in the run's JSON, and the report prints them
     */
    private static List<Object> warmUp(String system, int instance, int workers, Duration delay, BenchConfig cfg)
            throws Exception {
        List<Object> shares = new ArrayList<>();
        String schema = (system.equals("baseline") ? "bench_baseline" : "bench_riffle") + "_warm" + instance;
        QueueSystem w = system.equals("baseline") ? new BaselineSystem(cfg, schema) : new RiffleSystem(cfg, schema);
        java.util.Properties p = new java.util.Properties();
        p.setProperty("user", cfg.url.user());
        if (cfg.url.password() != null) {
            p.setProperty("password", cfg.url.password());
        }
        long t0 = System.nanoTime();
        try (java.sql.Connection admin = java.sql.DriverManager.getConnection(cfg.url.jdbcUrl(), p)) {
            admin.setAutoCommit(true);
            try {
                for (int pass = 1; pass <= JitSettle.MAX_PASSES; pass++) {
                    JitSettle timing = JitSettle.pass();
                    w.reset(admin);
                    w.open();
                    try {
                        warmUpPass(w, workers, delay, cfg);
                    } finally {
                        w.close();
                    }
                    Double share = timing.share();
                    shares.add(share);
                    System.err.printf(java.util.Locale.ROOT, "WorkerMain: instance %d warm-up pass %d in %.1f s,"
                            + " JIT compiling %s of it%n", instance, pass, timing.seconds(), JitSettle.format(share));
                    if (JitSettle.settled(share)) {
                        break;
                    }
                }
            } finally {
                w.close();
                try (java.sql.Statement st = admin.createStatement()) {
                    st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
                }
            }
        }
        System.err.printf("WorkerMain: instance %d warmed up on %,d jobs a pass in %.1f s%n", instance,
                cfg.childWarmupJobs, (System.nanoTime() - t0) / 1e9);
        return shares;
    }

    /**
     * One warm-up pass: enqueue {@code cfg.childWarmupJobs} jobs, drain them with the instance's shape. Handler events
     * go through the same {@link Events} sink and JSON encoder as in the measured run, into a discarding stream: with
     * a sink of its own the warm-up left the sink's call sites and {@link Json} to be compiled, or recompiled, during
     * the measured drain (compiler threads took 57 % of the children's CPU in a measured {@code 4x8} drain after a
     * warm-up that had settled under 5 %, /proc per-thread times).
     */
    private static void warmUpPass(QueueSystem w, int workers, Duration delay, BenchConfig cfg) throws Exception {
        int n = cfg.childWarmupJobs;
        String padding = Payloads.padding(cfg.payloadPad);
        List<QueueSystem.BenchJob> batch = new ArrayList<>();
        for (long seq = 0; seq < n; seq++) {
            batch.add(new QueueSystem.BenchJob(seq, 0, Payloads.args(seq, Payloads.epochMicros(), padding)));
            if (batch.size() == cfg.enqueueBatch || seq == n - 1) {
                w.enqueue(batch);
                batch = new ArrayList<>();
            }
        }
        Events events = new Events(new PrintStream(OutputStream.nullOutputStream(), false, StandardCharsets.UTF_8));
        w.startWorkers(workers, delay, events);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        long completed = 0;
        while (completed < n && System.nanoTime() < deadline) {
            LockSupport.parkNanos(FLUSH_MILLIS * 1_000_000L);
            completed += events.flush();
        }
        if (completed < n) {
            System.err.println("WorkerMain: warm-up did not finish; " + (n - completed) + " jobs left");
        }
        w.stopWorkers();
    }

    private static int serve(QueueSystem sys, int workers, Duration delay, Events events) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Thread flusher = null;
        String line;
        while ((line = in.readLine()) != null) {
            switch (line.trim()) {
                case "start" -> {
                    long cpu = ServerCpu.jvmProcessCpuNanos();
                    long jit = JitSettle.compileMillis();
                    sys.startWorkers(workers, delay, events);
                    flusher = new Thread(() -> {
                        while (!Thread.currentThread().isInterrupted()) {
                            LockSupport.parkNanos(FLUSH_MILLIS * 1_000_000L);
                            events.flush();
                        }
                    }, "worker-events");
                    flusher.setDaemon(true);
                    flusher.start();
                    emit(map("type", "go", "cpu_nanos", cpu, "jit_ms", jit));
                }
                case "mark" -> {
                    events.flush();
                    emit(map("type", "cpu", "cpu_nanos", ServerCpu.jvmProcessCpuNanos(), "jit_ms",
                            JitSettle.compileMillis()));
                }
                case "stop" -> {
                    sys.stopWorkers();
                    if (flusher != null) {
                        flusher.interrupt();
                        flusher.join(5_000);
                    }
                    events.flush();
                    Map<String, Object> done = map("type", "done", "counters", new LinkedHashMap<>(sys.counters()),
                            "cpu_nanos", ServerCpu.jvmProcessCpuNanos());
                    emit(done);
                    return 0;
                }
                default -> emit(map("type", "error", "message", "unknown command: " + line));
            }
        }
        System.err.println("WorkerMain: stdin closed before 'stop'; the harness is gone");
        return 1;
    }

    static void emit(Map<String, Object> message) {
        emit(protocol, message);
    }

    private static void emit(PrintStream out, Map<String, Object> message) {
        String line = Json.compact(message);
        synchronized (OUT_LOCK) {
            out.println(line);
            out.flush();
        }
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    /** Buffers handler events and writes them out in batches. */
    private static final class Events implements QueueSystem.JobSink {
        private final PrintStream out;
        private long[] started = new long[1024];
        private int nStarted;
        private long[] completed = new long[1024];
        private int nCompleted;
        private final AtomicInteger errorsReported = new AtomicInteger();

        Events(PrintStream out) {
            this.out = out;
        }

        @Override
        public void started(long seq) {
            long now = System.nanoTime();
            synchronized (this) {
                if (nStarted + 2 > started.length) {
                    started = Arrays.copyOf(started, started.length * 2);
                }
                started[nStarted++] = seq;
                started[nStarted++] = now;
            }
        }

        @Override
        public void completed(long seq) {
            long now = System.nanoTime();
            synchronized (this) {
                if (nCompleted + 2 > completed.length) {
                    completed = Arrays.copyOf(completed, completed.length * 2);
                }
                completed[nCompleted++] = seq;
                completed[nCompleted++] = now;
            }
        }

        @Override
        public void error(Throwable t) {
            // every error is counted by the harness; the first few carry their message
            emit(out, map("type", "error", "message",
                    errorsReported.incrementAndGet() <= 10 ? t.toString() : "(more)"));
        }

        /** Writes out the buffered events; returns how many completions they held. */
        int flush() {
            List<Object> s;
            List<Object> c;
            synchronized (this) {
                if (nStarted == 0 && nCompleted == 0) {
                    return 0;
                }
                s = new ArrayList<>(nStarted);
                for (int i = 0; i < nStarted; i++) {
                    s.add(started[i]);
                }
                c = new ArrayList<>(nCompleted);
                for (int i = 0; i < nCompleted; i++) {
                    c.add(completed[i]);
                }
                nStarted = 0;
                nCompleted = 0;
            }
            emit(out, map("type", "events", "started", s, "completed", c));
            return c.size() / 2;
        }
    }
}
