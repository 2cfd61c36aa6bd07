package dev.riffle.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * N instances of one system, each in its own JVM ({@link WorkerMain}), all draining the same queue. The children
 * run with this JVM's classpath and the harness's command line; the harness has already enqueued, the children only
 * drain, and report every handler start and durable completion back over stdout as JSON lines, with their own
 * {@link System#nanoTime()} (CLOCK_MONOTONIC on Linux, the same clock in every process of the machine: checked at
 * start). JVM CPU is the sum of the children's process CPU between {@code start} and {@code mark}.
 */
final class ProcessFleet implements Fleet {

    // Long enough for a child's warm-up drain (--child-warmup-jobs) on a loaded 2-core machine.
    private static final long READY_TIMEOUT_S = 600;
    private static final long REPLY_TIMEOUT_S = 60;

    private final BenchConfig cfg;
    private final String system;
    private final int instances;
    private final int workers;
    private final int delayMillis;
    private final List<Child> children = new ArrayList<>();
    private volatile Tracker tracker;

    ProcessFleet(BenchConfig cfg, String system, int instances, int workers, int delayMillis) {
        this.cfg = cfg;
        this.system = system;
        this.instances = instances;
        this.workers = workers;
        this.delayMillis = delayMillis;
    }

    @Override
    public void open() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cp = classpath();
        for (int i = 0; i < instances; i++) {
            List<String> cmd = new ArrayList<>();
            cmd.add(java);
            cmd.addAll(cfg.childJvmArgs);
            cmd.add("-cp");
            cmd.add(cp);
            cmd.add(WorkerMain.class.getName());
            cmd.add(system);
            cmd.add(String.valueOf(i));
            cmd.add(String.valueOf(workers));
            cmd.add(String.valueOf(delayMillis));
            cmd.addAll(cfg.args);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
            children.add(new Child(i, pb.start()));
        }
        for (Child c : children) {
            Map<String, Object> ready = c.await("ready", READY_TIMEOUT_S);
            long theirs = ((Number) ready.get("nanos")).longValue();
            long ours = System.nanoTime();
            // the reply left the child before we read it: its clock must be behind ours, by a little
            if (theirs > ours + 1_000_000_000L || ours - theirs > READY_TIMEOUT_S * 1_000_000_000L) {
                throw new IllegalStateException("instance " + c.index + ": System.nanoTime() is not comparable"
                        + " across processes (child " + theirs + ", harness " + ours + "); use --fleet jvm");
            }
            c.pid = ((Number) ready.get("pid")).longValue();
            Object shares = ready.get("warmup_jit_shares");
            c.warmupJitShares = shares instanceof List<?> l ? new ArrayList<>(l) : List.of();
        }
    }

    @Override
    public void start(Tracker tr) throws Exception {
        tracker = tr;
        for (Child c : children) {
            c.send("start");
        }
        for (Child c : children) {
            Map<String, Object> go = c.await("go", REPLY_TIMEOUT_S);
            c.cpuAtStart = ((Number) go.get("cpu_nanos")).longValue();
            c.jitAtStart = jitMillis(go);
        }
    }

    /** A {@code go} or {@code cpu} reply's JIT compile time so far, ms; -1 when the child's JVM does not report it. */
    private static long jitMillis(Map<String, Object> reply) {
        return reply.get("jit_ms") instanceof Number n ? n.longValue() : -1;
    }

    @Override
    public long jvmCpuNanos() throws Exception {
        for (Child c : children) {
            c.send("mark");
        }
        long sum = 0;
        for (Child c : children) {
            Map<String, Object> mark = c.await("cpu", REPLY_TIMEOUT_S);
            long now = ((Number) mark.get("cpu_nanos")).longValue();
            long jit = jitMillis(mark);
            c.jitUsedMillis = jit < 0 || c.jitAtStart < 0 ? -1 : jit - c.jitAtStart;
            if (now < 0 || c.cpuAtStart < 0) {
                return -1;
            }
            c.cpuUsed = now - c.cpuAtStart;
            sum += c.cpuUsed;
        }
        return sum;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Map<String, Object> stop() throws Exception {
        for (Child c : children) {
            if (!c.killed) {
                c.send("stop");
            }
        }
        List<Map<String, Object>> counters = new ArrayList<>();
        for (Child c : children) {
            if (c.killed) {
                continue;
            }
            Map<String, Object> done = c.await("done", REPLY_TIMEOUT_S);
            Map<String, Object> m = new LinkedHashMap<>((Map<String, Object>) done.get("counters"));
            counters.add(m);
        }
        for (Child c : children) {
            if (c.killed) {
                continue;
            }
            c.await("closed", REPLY_TIMEOUT_S);
            if (!c.process.waitFor(REPLY_TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("instance " + c.index + " did not exit after closing");
            }
        }
        Map<String, Object> merged = new LinkedHashMap<>(Fleet.merge(counters));
        List<Object> procs = new ArrayList<>();
        for (Child c : children) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("instance", c.index);
            p.put("pid", c.pid);
            p.put("exit_code", c.process.exitValue());
            p.put("killed", c.killed);
            p.put("jvm_cpu_s", c.cpuUsed < 0 ? null : c.cpuUsed / 1e9);
            // one entry per warm-up pass (--child-warmup-jobs): the JIT's share of that pass's wall time
            p.put("warmup_jit_shares", c.warmupJitShares);
            // the JIT's compile time (elapsed, summed over its threads) between the drain's start and its end
            p.put("drain_jit_s", c.jitUsedMillis < 0 ? null : c.jitUsedMillis / 1e3);
            procs.add(p);
        }
        merged.put("processes", procs);
        return merged;
    }

    /** Handler starts instance {@code instance} has reported so far. */
    long startsReported(int instance) {
        return children.get(instance).startsReported.get();
    }

    /**
     * Crash under load (docs/validation): SIGKILL to one instance while it holds claimed jobs, no shutdown of any
     * kind, and waits for it to be gone. {@link #stop} then skips it. Returns the killed process's pid.
     */
    long killForcibly(int instance) throws InterruptedException {
        Child c = children.get(instance);
        c.killed = true;
        c.process.destroyForcibly(); // SIGKILL on Linux
        if (!c.process.waitFor(REPLY_TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("instance " + instance + " survived SIGKILL");
        }
        return c.pid;
    }

    @Override
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("fleet", "process");
        m.put("instances", instances);
        m.put("workers_per_instance", workers);
        m.put("child_jvm_args", new ArrayList<Object>(cfg.childJvmArgs));
        return m;
    }

    @Override
    public void close() {
        for (Child c : children) {
            c.kill();
        }
    }

    /**
     * The classpath this code was loaded from: the URLs of its class loader when that is a {@link URLClassLoader}
     * ({@code mvn exec:java} runs the bench in one, and {@code java.class.path} is then Maven's own), else
     * {@code java.class.path} (plain {@code java -cp}, surefire); in both cases with this code's own location.
     */
    static String classpath() throws URISyntaxException {
        Set<String> parts = new LinkedHashSet<>();
        ClassLoader cl = ProcessFleet.class.getClassLoader();
        if (cl instanceof URLClassLoader u) {
            for (URL url : u.getURLs()) {
                if ("file".equals(url.getProtocol())) {
                    parts.add(Path.of(url.toURI()).toString());
                }
            }
        }
        if (parts.isEmpty()) {
            for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
                if (!p.isEmpty()) {
                    parts.add(p);
                }
            }
        }
        URL own = ProcessFleet.class.getProtectionDomain().getCodeSource().getLocation();
        parts.add(Path.of(own.toURI()).toString());
        return String.join(java.io.File.pathSeparator, parts);
    }

    /** One child process: its stdin for commands, a thread reading its stdout. */
    private final class Child {
        final int index;
        final Process process;
        final Writer stdin;
        final BlockingQueue<Map<String, Object>> replies = new LinkedBlockingQueue<>();
        final Thread reader;
        long pid;
        long cpuAtStart = -1;
        long cpuUsed = -1;
        List<Object> warmupJitShares = List.of();
        long jitAtStart = -1;
        long jitUsedMillis = -1;
        volatile boolean killed;
        /** Handler starts this child has reported (CrashRun waits for the victim to be working before it kills). */
        final java.util.concurrent.atomic.AtomicLong startsReported = new java.util.concurrent.atomic.AtomicLong();

        Child(int index, Process process) {
            this.index = index;
            this.process = process;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            this.reader = new Thread(this::read, "fleet-" + system + "-" + index);
            reader.setDaemon(true);
            reader.start();
        }

        void send(String command) throws IOException {
            stdin.write(command + "\n");
            stdin.flush();
        }

        @SuppressWarnings("unchecked")
        private void read() {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.startsWith("{")) {
                        System.err.println("[" + system + " instance " + index + "] " + line);
                        continue;
                    }
                    Map<String, Object> m = (Map<String, Object>) Json.parse(line);
                    String type = (String) m.get("type");
                    if ("events".equals(type)) {
                        apply(m);
                    } else if ("error".equals(type)) {
                        Tracker tr = tracker;
                        RuntimeException e = new IllegalStateException(system + " instance " + index + ": "
                                + m.get("message"));
                        if (tr != null) {
                            tr.error(e);
                        } else {
                            System.err.println(e.getMessage());
                        }
                    } else {
                        replies.add(m);
                    }
                }
            } catch (IOException | RuntimeException e) {
                System.err.println("[" + system + " instance " + index + "] reading its output failed: " + e);
            }
            replies.add(Map.of("type", "eof"));
        }

        @SuppressWarnings("unchecked")
        private void apply(Map<String, Object> m) {
            Tracker tr = tracker;
            if (tr == null) {
                return;
            }
            List<Object> s = (List<Object>) m.get("started");
            startsReported.addAndGet(s.size() / 2);
            for (int i = 0; i + 1 < s.size(); i += 2) {
                tr.startedAt(((Number) s.get(i)).longValue(), ((Number) s.get(i + 1)).longValue());
            }
            List<Object> c = (List<Object>) m.get("completed");
            for (int i = 0; i + 1 < c.size(); i += 2) {
                tr.completedAt(((Number) c.get(i)).longValue(), ((Number) c.get(i + 1)).longValue());
            }
        }

        Map<String, Object> await(String type, long timeoutSeconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            while (true) {
                long left = deadline - System.nanoTime();
                Map<String, Object> m = left <= 0 ? null : replies.poll(left, TimeUnit.NANOSECONDS);
                if (m == null) {
                    throw new IllegalStateException(system + " instance " + index + ": no '" + type + "' within "
                            + timeoutSeconds + " s");
                }
                if (type.equals(m.get("type"))) {
                    return m;
                }
                if ("eof".equals(m.get("type"))) {
                    replies.add(m);
                    String code = process.isAlive() ? "still running" : "exit code " + process.exitValue();
                    throw new IllegalStateException(system + " instance " + index + " ended its output before '"
                            + type + "' (" + code + "; its stderr is above)");
                }
            }
        }

        void kill() {
            if (!process.isAlive()) {
                return;
            }
            try {
                stdin.close(); // a child whose stdin ends closes its engine and exits
            } catch (IOException e) {
                // going on to destroy it
            }
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroy();
                    if (!process.waitFor(5, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                    }
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
