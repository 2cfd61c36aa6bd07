package dev.riffle.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.HdrHistogram.Histogram;

/**
 * Runs one scenario for one system and returns its result as a JSON-ready map: {@code metrics} (flat numbers the
 * summary compares), plus details (phase counter differences, dead tuples per table, system counters).
 *
 * <p>Every run starts from a fresh schema. Commit counters and WAL positions are read only at phase boundaries, after
 * the system has closed its connections (a backend flushes its statistics when it exits) and {@code --stats-wait-ms}
 * has passed, so the counts are complete; the harness's own statements in between are counted and reported.
 */
final class Runner {

    private final BenchConfig cfg;
    private final Monitor mon;
    private final Function<String, QueueSystem> factory;
    private final String padding;
    private final List<QueueSystem> created = new ArrayList<>();
    private final List<Fleet> fleets = new ArrayList<>();
    private final ServerCpu serverCpu;
    /** Told when a steady run's producer starts and stops (the validation's dead-tuple sampler marks its samples). */
    private volatile java.util.function.Consumer<String> phaseListener = phase -> { };

    Runner(BenchConfig cfg, Monitor mon, ServerCpu serverCpu, Function<String, QueueSystem> factory) {
        this.cfg = cfg;
        this.mon = mon;
        this.serverCpu = serverCpu;
        this.factory = factory;
        this.padding = Payloads.padding(cfg.payloadPad);
    }

    /** Receives {@code "load-start"} and {@code "load-end"} from every steady run (one listener at a time). */
    void onPhase(java.util.function.Consumer<String> listener) {
        phaseListener = listener == null ? phase -> { } : listener;
    }

    private QueueSystem create(String systemName) {
        QueueSystem s = factory.apply(systemName);
        created.add(s);
        return s;
    }

    /** After a failed run: closes every system this runner created (closing twice is harmless) and ends a pin. */
    void cleanUpAfterFailure() {
        for (Fleet f : fleets) {
            f.close();
        }
        fleets.clear();
        for (QueueSystem s : created) {
            try {
                s.close();
            } catch (RuntimeException e) {
                // best effort
            }
        }
        created.clear();
        try {
            mon.releasePin();
        } catch (java.sql.SQLException e) {
            // best effort
        }
    }

    /** After a successful run: forget the (closed) systems. */
    void forgetSystems() {
        created.clear();
        fleets.clear();
    }

    // ------------------------------------------------------------------------------------------------ drain

    /** The drain scenario: one instance of W handlers in this JVM, --jobs jobs. */
    Map<String, Object> drain(String systemName, int workers, int delayMillis) throws Exception {
        return drain(systemName, "drain", key("drain", workers, delayMillis), null, 1, workers, delayMillis, false,
                cfg.jobs);
    }

    /** The unmeasured warm-up drain (--warmup-jobs): the drain scenario's shape; its result is not recorded. */
    Map<String, Object> warmup(String systemName, int workers, int jobs) throws Exception {
        return warmup(systemName, workers, 0, jobs);
    }

    /** An unmeasured warm-up drain with handlers that take {@code delayMillis} (non-blocking); not recorded. */
    Map<String, Object> warmup(String systemName, int workers, int delayMillis, int jobs) throws Exception {
        return drain(systemName, "warmup", key("warmup", workers, delayMillis), null, 1, workers, delayMillis, false,
                jobs);
    }

        /** A drain-shaped profile ({@code <N>x<W>}, {@code w<W>}): --profile-jobs jobs. */
    Map<String, Object> drainProfile(String systemName, Profile p, int delayMillis) throws Exception {
        return drain(systemName, "drain", p.key(delayMillis), p.name(), p.instances(), p.workers(), delayMillis,
                p.separateProcess(), cfg.profileJobs);
    }

    /**
     * Pre-enqueues {@code n} jobs with one instance of the system, closes it, then drains them with {@code instances}
     * instances of {@code workers} handlers each ({@link ProcessFleet} when {@code processes}, else
     * {@link JvmFleet}). WAL and commits are phase counter differences (enqueue, drain); CPU is measured from the
     * handlers' start until the last durable completion.
     */
    private Map<String, Object> drain(String systemName, String scenario, String key, String profile, int instances,
                                      int workers, int delayMillis, boolean processes, int n) throws Exception {
        Tracker tr = new Tracker(n);
        QueueSystem sys = create(systemName);
        sys.reset(mon.connection());
        mon.statements++;
        mon.checkpoint();
        sleep(cfg.statsWaitMillis); // backends used by the reset (Riffle migrates here) flush their counters on exit
        Monitor.Snapshot s0 = mon.snapshot(sys.schema());
        sys.open();
        ServerCpu.Window cpuEnqueue = serverCpu.begin();
        long jvmEnqueue0 = ServerCpu.jvmProcessCpuNanos();
        long t0 = System.nanoTime();
        preEnqueue(sys, tr, n);
        long t1 = System.nanoTime();
        long jvmEnqueue = ServerCpu.jvmProcessCpuNanos() - jvmEnqueue0;
        Map<String, Object> serverEnqueue = cpuEnqueue.end();
        sys.close();
        sleep(cfg.statsWaitMillis);
        Monitor.Snapshot s1 = mon.snapshot(sys.schema());
        Map<String, Object> deadAfterEnqueue = mon.deadTuples(sys.schema());

        Fleet fleet = processes
                ? new ProcessFleet(cfg, systemName, instances, workers, delayMillis)
                : new JvmFleet(() -> create(systemName), instances, workers, Duration.ofMillis(delayMillis));
        fleets.add(fleet);
        long tOpen = System.nanoTime();
        fleet.open();
        double openSeconds = seconds(tOpen, System.nanoTime());
        // The drain's counters start here, not at s1: child JVMs warm up in schemas of their own in this database
        // (--child-warmup-jobs) while the fleet opens, and their WAL and commits were counted as the drain's.
        Monitor.Snapshot s1Drain = s1;
        if (processes) {
            sleep(cfg.statsWaitMillis); // the warm-up's backends flush their counters on exit
            s1Drain = mon.snapshot(sys.schema());
        }
        ServerCpu.Window cpuDrain = serverCpu.begin();
        long t2 = System.nanoTime();
        fleet.start(tr);
        boolean complete = awaitDrained(tr, t2);
        long t3 = complete ? tr.lastCompletionNanos() : System.nanoTime();
        long jvmDrain = fleet.jvmCpuNanos();
        Map<String, Object> serverDrain = cpuDrain.end();
        sleep(cfg.settleMillis);
        Map<String, Object> counters = fleet.stop();
        sleep(cfg.statsWaitMillis);
        Monitor.Snapshot s2 = mon.snapshot(sys.schema());
        Map<String, Object> deadEnd = mon.deadTuples(sys.schema());

        long done = tr.completedUnique.get();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("enqueue_jobs_per_s", n / seconds(t0, t1));
        m.put("completed_jobs_per_s", done / seconds(t2, t3));
        m.put("drain_seconds", seconds(t2, t3));
        Map<String, Object> enq = s0.diff(s1);
        Map<String, Object> drn = s1Drain.diff(s2);
        long walEnq = (Long) enq.get("wal_bytes");
        long walDrain = (Long) drn.get("wal_bytes");
        long cEnq = (Long) enq.get("xact_commit");
        long cDrain = (Long) drn.get("xact_commit");
        m.put("wal_bytes_per_job_enqueue", per(walEnq, n));
        m.put("wal_bytes_per_job_drain", per(walDrain, done));
        m.put("wal_bytes_per_job_total", per(walEnq + walDrain, done));
        m.put("commits_per_job_enqueue", per(cEnq, n));
        m.put("commits_per_job_drain", per(cDrain, done));
        m.put("commits_per_job_total", per(cEnq + cDrain, done));
        m.put("xids_per_job_drain", per((Long) drn.get("xids_assigned"), done));
        Tracker.Latencies lat = tr.latencies(Long.MIN_VALUE, Long.MAX_VALUE, t2);
        putLatency(m, "", lat);
        putCpu(m, "_enqueue", serverEnqueue, jvmEnqueue, n);
        putCpu(m, "_drain", serverDrain, jvmDrain, done);
        putFunctions(m, enq, drn, counters, n, done);
        m.put("dead_tuples_after_enqueue", deadTotal(deadAfterEnqueue));
        m.put("dead_tuples_end", deadTotal(deadEnd));
        m.put("dead_tuples_end_exact", deadExact(deadEnd));
        m.put("dead_tuples_per_job", per(((Number) deadTotal(deadEnd)).longValue(), done));
        m.put("jobs_enqueued", tr.enqueued.get());
        m.put("jobs_completed", done);
        m.put("jobs_lost", tr.enqueued.get() - done);
        m.put("jobs_completed_twice", tr.completedDuplicate.get());
        m.put("handler_starts", tr.startsTotal.get());
        m.put("pickup_clamped_to_zero", lat.clampedToZero());
        m.put("errors", tr.errors.get());

        Map<String, Object> r = header(systemName, scenario, key);
        if (profile != null) {
            r.put("profile", profile);
        }
        r.put("params", params("jobs", n, "instances", instances, "workers_per_instance", workers,
                "workers", instances * workers, "delay_ms", delayMillis));
        Map<String, Object> fleetInfo = new LinkedHashMap<>(fleet.describe());
        fleetInfo.put("open_seconds", openSeconds);
        r.put("fleet", fleetInfo);
        r.put("complete", complete);
        r.put("metrics", m);
        Map<String, Object> phases = new LinkedHashMap<>();
        phases.put("enqueue", enq);
        phases.put("drain", drn);
        r.put("phases", phases);
        Map<String, Object> cpu = new LinkedHashMap<>();
        serverEnqueue.put("jvm_cpu_s", jvmEnqueue < 0 ? null : jvmEnqueue / 1e9);
        serverDrain.put("jvm_cpu_s", jvmDrain < 0 ? null : jvmDrain / 1e9);
        cpu.put("enqueue", serverEnqueue);
        cpu.put("drain", serverDrain);
        r.put("cpu", cpu);
        Map<String, Object> dead = new LinkedHashMap<>();
        dead.put("after_enqueue", deadAfterEnqueue);
        dead.put("end", deadEnd);
        r.put("dead_tuples", dead);
        r.put("counters", counters);
        errorNote(r, tr);
        return r;
    }

    private void preEnqueue(QueueSystem sys, Tracker tr, int n) throws Exception {
        AtomicLong next = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(cfg.enqueueConcurrency, r -> {
            Thread t = new Thread(r, "bench-enqueue");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < cfg.enqueueConcurrency; i++) {
                fs.add(pool.submit(() -> {
                    while (true) {
                        long from = next.getAndAdd(cfg.enqueueBatch);
                        if (from >= n) {
                            return null;
                        }
                        long to = Math.min(n, from + cfg.enqueueBatch);
                        List<QueueSystem.BenchJob> batch = batch(from, to);
                        sys.enqueue(batch);
                        long now = System.nanoTime();
                        for (long s = from; s < to; s++) {
                            tr.committed(s, now);
                        }
                        tr.enqueued.addAndGet(to - from);
                    }
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private List<QueueSystem.BenchJob> batch(long from, long to) {
        List<QueueSystem.BenchJob> b = new ArrayList<>((int) (to - from));
        long micros = Payloads.epochMicros();
        for (long s = from; s < to; s++) {
            b.add(new QueueSystem.BenchJob(s, micros, Payloads.args(s, micros, padding)));
        }
        return b;
    }

    private boolean awaitDrained(Tracker tr, long since) {
        long deadline = since + TimeUnit.SECONDS.toNanos(cfg.drainTimeoutSeconds);
        while (tr.outstanding() > 0) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(1_000_000);
        }
        return true;
    }

    // ------------------------------------------------------------------------------------- steady / pinned

    /**
     * The steady scenario ({@code pinned == false}): producer at {@code rate} for --steady-seconds. The pinned
     * scenario: the same load while a second connection holds an idle-in-transaction xid for --pinned-seconds, then
     * --recovery-seconds of the same load after the release.
     */
    Map<String, Object> steady(String systemName, double rate, String rateSource, boolean pinned) throws Exception {
        return steady(systemName, pinned ? "pinned" : "steady", null, rate, rateSource, pinned, cfg.steadyWorkers);
    }

    /** The steady scenario under another key: a {@code steady-b<P>} profile. */
    Map<String, Object> steadyProfile(String systemName, Profile p, double rate, String rateSource) throws Exception {
        return steady(systemName, p.key(0), p.name(), rate, rateSource, false,
                p.workers() > 0 ? p.workers() : cfg.steadyWorkers);
    }

    private Map<String, Object> steady(String systemName, String key, String profile, double rate, String rateSource,
                                       boolean pinned, int w) throws Exception {
        int delay = cfg.steadyDelayMillis;
        int loadSeconds = pinned ? cfg.pinnedSeconds + cfg.recoverySeconds : cfg.steadySeconds;
        int capacity = (int) Math.min(Integer.MAX_VALUE - 16, (long) Math.ceil(rate * loadSeconds * 1.2) + 100_000);
        Tracker tr = new Tracker(capacity);
        QueueSystem sys = create(systemName);
        sys.reset(mon.connection());
        mon.statements++;
        mon.checkpoint();
        sleep(cfg.statsWaitMillis); // backends used by the reset (Riffle migrates here) flush their counters on exit
        sys.open();
        sys.startWorkers(w, Duration.ofMillis(delay), tr);
        sleep(300); // subscriptions and listeners settle before the clock starts
        Monitor.Snapshot s0 = mon.snapshot(sys.schema());

        Map<String, Object> m = new LinkedHashMap<>();
        Map<String, Object> r = header(systemName, pinned ? "pinned" : "steady", key);
        if (profile != null) {
            r.put("profile", profile);
        }
        Map<String, Object> pinInfo = new LinkedHashMap<>();
        Producer producer = new Producer(sys, tr, rate, capacity);
        ServerCpu.Window cpuWindow = serverCpu.begin();
        long jvm0 = ServerCpu.jvmProcessCpuNanos();
        long tp0 = System.nanoTime();
        if (pinned) {
            pinInfo.put("pinned_xid", mon.pinXmin());
        }
        producer.start();
        phaseListener.accept("load-start");
        long tPhase1End = tp0 + TimeUnit.SECONDS.toNanos(pinned ? cfg.pinnedSeconds : cfg.steadySeconds);
        sleepUntil(tPhase1End);
        long tRecEnd = tPhase1End;
        long tRelease = tPhase1End;
        Map<String, Object> deadPinEnd = null;
        Map<String, Object> deadRecoveryEnd = null;
        long backlogPinEnd = 0;
        long backlogRecoveryEnd = 0;
        if (pinned) {
            backlogPinEnd = tr.outstanding();
            pinInfo.put("session_at_end", mon.pinState());
            deadPinEnd = mon.deadTuples(sys.schema());
            mon.releasePin();
            tRelease = System.nanoTime();
            pinInfo.put("released_after_s", seconds(tp0, tRelease));
            tRecEnd = tRelease + TimeUnit.SECONDS.toNanos(cfg.recoverySeconds);
            sleepUntil(tRecEnd);
            backlogRecoveryEnd = tr.outstanding();
            deadRecoveryEnd = mon.deadTuples(sys.schema());
        }
        producer.stop();
        long tStop = System.nanoTime();
        phaseListener.accept("load-end");
        long jvmCpu = ServerCpu.jvmProcessCpuNanos() - jvm0;
        Map<String, Object> serverCpuUsed = cpuWindow.end();
        boolean complete = awaitDrained(tr, tStop);
        long tDrained = System.nanoTime();
        sleep(cfg.settleMillis);
        sys.stopWorkers();
        Map<String, Object> counters = sys.counters();
        sys.close();
        sleep(cfg.statsWaitMillis);
        Monitor.Snapshot s1 = mon.snapshot(sys.schema());
        Map<String, Object> deadEnd = mon.deadTuples(sys.schema());

        long done = tr.completedUnique.get();
        long enq = tr.enqueued.get();
        m.put("rate_target", rate);
        m.put("enqueue_jobs_per_s", enq / seconds(tp0, producer.stoppedAt));
        m.put("completed_jobs_per_s", tr.completedBetween(tp0, tStop) / seconds(tp0, tStop));
        Tracker.Latencies all = tr.latencies(tp0, tStop);
        putLatency(m, "", all);
        if (!pinned) {
            // The same latencies for the jobs committed in the second half of the load: the system's steady state,
            // without the start of the run, where an engine starts under full load with cold connections (each new
            // PostgreSQL backend plans Riffle's functions on first use) and builds a backlog it then works off. The
            // whole-run figures above keep that start; the report shows both.
            long tHalf = tp0 + (tStop - tp0) / 2;
            putLatency(m, "second_half_", tr.latencies(tHalf, tStop));
            m.put("second_half_completed_jobs_per_s", tr.completedBetween(tHalf, tStop) / seconds(tHalf, tStop));
        }
        // Where in the run the tail is: a p99 made of one stall reads differently from one spread over the run.
        List<Map<String, Object>> bySecond = tr.pickupBySecond(tp0, tStop);
        m.put("pickup_by_second", bySecond);
        m.put("pickup_worst_second_p99_ms", bySecond.stream().map(sec -> (Double) sec.get("pickup_p99_ms"))
                .filter(java.util.Objects::nonNull).max(Double::compare).orElse(null));
        Map<String, Object> whole = s0.diff(s1);
        m.put("wal_bytes_per_job", per((Long) whole.get("wal_bytes"), done));
        m.put("commits_per_job", per((Long) whole.get("xact_commit"), done));
        m.put("xids_per_job", per((Long) whole.get("xids_assigned"), done));
        long producedInWindow = tr.completedBetween(tp0, tStop);
        putCpu(m, "", serverCpuUsed, jvmCpu, producedInWindow);
        putFunctions(m, null, whole, counters, enq, done);
        if (pinned) {
            double pinnedRate = tr.completedBetween(tp0, tPhase1End) / seconds(tp0, tPhase1End);
            double recoveryRate = tr.completedBetween(tRelease, tRecEnd) / seconds(tRelease, tRecEnd);
            m.put("pinned_completed_jobs_per_s", pinnedRate);
            m.put("recovery_completed_jobs_per_s", recoveryRate);
            m.put("pinned_fraction_of_target", pinnedRate / rate);
            putLatency(m, "pinned_", tr.latencies(tp0, tPhase1End));
            putLatency(m, "recovery_", tr.latencies(tRelease, tRecEnd));
            m.put("backlog_end_pinned", backlogPinEnd);
            m.put("backlog_end_recovery", backlogRecoveryEnd);
            long allowed = Math.max(2L * w, (long) Math.ceil(rate * 0.1));
            m.put("drained_in_recovery", backlogRecoveryEnd <= allowed);
            m.put("dead_tuples_end_pinned", deadTotal(deadPinEnd));
            m.put("dead_tuples_end_pinned_exact", deadExact(deadPinEnd));
            m.put("dead_tuples_end_recovery", deadTotal(deadRecoveryEnd));
            m.put("dead_tuples_end_recovery_exact", deadExact(deadRecoveryEnd));
            r.put("drained_in_recovery_rule", "backlog at the end of recovery <= max(2 x W, 0.1 s x rate) = " + allowed);
        }
        m.put("drain_after_stop_s", seconds(tStop, tDrained));
        m.put("dead_tuples_end", deadTotal(deadEnd));
        m.put("dead_tuples_end_exact", deadExact(deadEnd));
        m.put("dead_tuples_per_job", per(((Number) deadTotal(deadEnd)).longValue(), done));
        m.put("jobs_enqueued", enq);
        m.put("jobs_completed", done);
        m.put("jobs_lost", enq - done);
        m.put("jobs_completed_twice", tr.completedDuplicate.get());
        m.put("pickup_clamped_to_zero", all.clampedToZero());
        m.put("errors", tr.errors.get());

        r.put("params", params("rate", rate, "rate_source", rateSource, "workers", w, "delay_ms", delay,
                pinned ? "pinned_seconds" : "seconds", pinned ? cfg.pinnedSeconds : cfg.steadySeconds,
                "recovery_seconds", pinned ? cfg.recoverySeconds : null, "producer_tick_ms", cfg.producerTickMillis));
        r.put("complete", complete);
        r.put("metrics", m);
        r.put("phases", Map.of("whole", whole));
        serverCpuUsed.put("jvm_cpu_s", jvmCpu / 1e9);
        r.put("cpu", Map.of("load", serverCpuUsed));
        Map<String, Object> dead = new LinkedHashMap<>();
        if (pinned) {
            dead.put("end_pinned", deadPinEnd);
            dead.put("end_recovery", deadRecoveryEnd);
            r.put("pin", pinInfo);
        }
        dead.put("end", deadEnd);
        r.put("dead_tuples", dead);
        r.put("counters", counters);
        errorNote(r, tr);
        return r;
    }

    private static void putLatency(Map<String, Object> m, String prefix, Tracker.Latencies l) {
        Histogram p = l.pickupMicros();
        Histogram c = l.completeMicros();
        m.put(prefix + "pickup_p50_ms", ms(p, 50));
        m.put(prefix + "pickup_p95_ms", ms(p, 95));
        m.put(prefix + "pickup_p99_ms", ms(p, 99));
        m.put(prefix + "pickup_max_ms", p.getTotalCount() == 0 ? null : p.getMaxValue() / 1000.0);
        m.put(prefix + "complete_p50_ms", ms(c, 50));
        m.put(prefix + "complete_p95_ms", ms(c, 95));
        m.put(prefix + "complete_p99_ms", ms(c, 99));
        m.put(prefix + "complete_max_ms", c.getTotalCount() == 0 ? null : c.getMaxValue() / 1000.0);
        Histogram sc = l.startToCompleteMicros();
        m.put(prefix + "start_to_complete_p50_ms", ms(sc, 50));
        m.put(prefix + "start_to_complete_p95_ms", ms(sc, 95));
        m.put(prefix + "start_to_complete_p99_ms", ms(sc, 99));
        m.put(prefix + "latency_samples", p.getTotalCount());
    }

    /**
     * CPU per job over a window: the bench database's backends and the whole cluster (from /proc, null when not
     * visible), and the JVM(s) running the system (null when unknown).
     */
    private static void putCpu(Map<String, Object> m, String suffix, Map<String, Object> server, long jvmNanos,
                               long jobs) {
        Double backends = Summary.num(server.get("bench_backends_cpu_s"));
        Double cluster = Summary.num(server.get("cluster_cpu_s"));
        m.put("server_cpu_us_per_job" + suffix, backends == null || jobs == 0 ? null : backends * 1e6 / jobs);
        m.put("cluster_cpu_us_per_job" + suffix, cluster == null || jobs == 0 ? null : cluster * 1e6 / jobs);
        m.put("jvm_cpu_us_per_job" + suffix, jvmNanos < 0 || jobs == 0 ? null : jvmNanos / 1e3 / jobs);
    }

    /**
     * Server time inside Riffle's PL/pgSQL functions ({@code pg_stat_user_functions}, total time including the
     * functions they call) over the phase: {@code claim_ready} per claimed job and per call, {@code complete_compact}
     * per completed job and per call, {@code enqueue_jobs} per enqueued job. Nothing when no function was tracked
     * (the baseline has none; track_functions off).
     */
    @SuppressWarnings("unchecked")
    private static void putFunctions(Map<String, Object> m, Map<String, Object> enqueuePhase,
                                     Map<String, Object> workPhase, Map<String, Object> counters, long enqueued,
                                     long completed) {
        Map<String, Object> work = (Map<String, Object>) workPhase.get("functions");
        Map<String, Object> enq = enqueuePhase == null ? work : (Map<String, Object>) enqueuePhase.get("functions");
        if ((work == null || work.isEmpty()) && (enq == null || enq.isEmpty())) {
            return;
        }
        Number claimedCounter = counters.get("claimed_jobs") instanceof Number c ? c : null;
        long claimed = claimedCounter == null ? completed : claimedCounter.longValue();
        putFunction(m, work, "claim_ready", "claim_ready_us_per_claimed_job", claimed);
        putFunction(m, work, "complete_compact", "complete_compact_us_per_completed_job", completed);
        putFunction(m, enq, "enqueue_jobs", "enqueue_jobs_us_per_job", enqueued);
    }

    @SuppressWarnings("unchecked")
    private static void putFunction(Map<String, Object> m, Map<String, Object> fs, String fn, String perJobKey,
                                    long jobs) {
        Map<String, Object> f = fs == null ? null : (Map<String, Object>) fs.get(fn);
        Double totalMs = f == null ? null : Summary.num(f.get("total_ms"));
        Double calls = f == null ? null : Summary.num(f.get("calls"));
        m.put(perJobKey, totalMs == null || jobs == 0 ? null : totalMs * 1000 / jobs);
        m.put(fn + "_us_per_call", totalMs == null || calls == null || calls == 0 ? null : totalMs * 1000 / calls);
        m.put(fn + "_calls", calls == null ? null : calls.longValue());
    }

    private static Double ms(Histogram h, double pct) {
        return h.getTotalCount() == 0 ? null : h.getValueAtPercentile(pct) / 1000.0;
    }

    /** Produces at a fixed rate: every tick it commits, in one call, whatever is due by then. */
    private final class Producer {
        private final QueueSystem sys;
        private final Tracker tr;
        private final double rate;
        private final int capacity;
        private volatile boolean stop;
        private Thread thread;
        volatile long stoppedAt;

        Producer(QueueSystem sys, Tracker tr, double rate, int capacity) {
            this.sys = sys;
            this.tr = tr;
            this.rate = rate;
            this.capacity = capacity;
        }

        void start() {
            thread = new Thread(this::run, "bench-producer");
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            long t0 = System.nanoTime();
            long tick = TimeUnit.MILLISECONDS.toNanos(cfg.producerTickMillis);
            long sent = 0;
            long nextTick = t0;
            try {
                while (!stop) {
                    long now = System.nanoTime();
                    long due = (long) (rate * (now - t0) / 1e9) - sent;
                    due = Math.min(due, capacity - sent);
                    if (due > 0) {
                        long n = Math.min(due, cfg.enqueueBatch);
                        List<QueueSystem.BenchJob> b = batch(sent, sent + n);
                        sys.enqueue(b);
                        long committed = System.nanoTime();
                        for (long s = sent; s < sent + n; s++) {
                            tr.committed(s, committed);
                        }
                        sent += n;
                        tr.enqueued.addAndGet(n);
                    }
                    nextTick += tick;
                    long wait = nextTick - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    } else {
                        nextTick = System.nanoTime();
                    }
                }
            } catch (Exception e) {
                tr.error(e);
            } finally {
                stoppedAt = System.nanoTime();
            }
        }

        void stop() throws InterruptedException {
            stop = true;
            thread.join(60_000);
        }
    }

    // ---------------------------------------------------------------------------------------------- helpers

    static String key(String scenario, int workers, int delayMillis) {
        return scenario + " W=" + workers + " delay=" + delayMillis + "ms";
    }

    private static Map<String, Object> header(String system, String scenario, String key) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("system", system);
        r.put("scenario", scenario);
        r.put("key", key);
        r.put("started_at", java.time.Instant.now().toString());
        return r;
    }

    private static Map<String, Object> params(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] != null) {
                m.put((String) kv[i], kv[i + 1]);
            }
        }
        return m;
    }

    private static void errorNote(Map<String, Object> r, Tracker tr) {
        Throwable t = tr.firstError.get();
        if (t != null) {
            r.put("first_error", t.toString());
        }
    }

    /** Dead tuples produced and not yet vacuumed: {@code n_dead_tup}, summed over the schema's tables. */
    static Object deadTotal(Map<String, Object> dead) {
        return dead.get("n_dead_tup_total");
    }

    /** Dead tuples present right now ({@code pgstattuple}; pruned ones are gone), or null without pgstattuple. */
    static Object deadExact(Map<String, Object> dead) {
        return dead.get("dead_exact_total");
    }

    private static double seconds(long from, long to) {
        return Math.max(1, to - from) / 1e9;
    }

    private static Double per(long amount, long jobs) {
        return jobs == 0 ? null : (double) amount / jobs;
    }

    private static void sleep(long millis) throws InterruptedException {
        if (millis > 0) {
            Thread.sleep(millis);
        }
    }

    private static void sleepUntil(long nanos) throws InterruptedException {
        long left;
        while ((left = nanos - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, left / 1_000_000));
        }
    }
}
