package dev.riffle.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Server-side CPU time, read from {@code /proc} of the machine this JVM runs on (so only when PostgreSQL is local and
 * its processes are visible). Two numbers per measurement window:
 *
 * <ul>
 *   <li><b>bench backends</b>: user + system time of every backend connected to the bench database (recognised by
 *       its process title {@code postgres: [cluster: ]user database host(port) …}), except the harness's own
 *       monitor connection. A backend that exists when the window begins counts from that moment, one that starts
 *       later from its birth. The window is sampled every {@value #SAMPLE_MILLIS} ms and once more at its end, so a
 *       backend that exits inside the window loses at most the CPU of its last sampling interval (the harness ends a
 *       window before it closes the system's connections).</li>
 *   <li><b>cluster</b>: every process of the server: the postmaster's own and reaped children's time
 *       ({@code cutime + cstime}, which is where an exited backend's time goes) plus every live child. Exact at tick
 *       resolution, but it includes the WAL writer, checkpointer, autovacuum and any other session on the server.</li>
 * </ul>
 */
final class ServerCpu {

    static final int SAMPLE_MILLIS = 100;

    private final boolean available;
    private final String note;
    private final int postmasterPid;
    private final int monitorPid;
    private final String titlePrefix;
    private final long nanosPerTick;
    private final Map<String, Boolean> isBenchBackend = new java.util.concurrent.ConcurrentHashMap<>();

    private ServerCpu(boolean available, String note, int postmasterPid, int monitorPid, String titlePrefix) {
        this.available = available;
        this.note = note;
        this.postmasterPid = postmasterPid;
        this.monitorPid = monitorPid;
        this.titlePrefix = titlePrefix;
        this.nanosPerTick = 1_000_000_000L / clockTicksPerSecond();
    }

    /**
     * Finds the server's processes through the monitor connection's backend; returns an instance that measures
     * nothing (and says why in {@link #note()}) when they are not visible.
     */
    static ServerCpu probe(Connection monitor, String user, String database) throws SQLException {
        int pid;
        String cluster;
        try (Statement st = monitor.createStatement();
             ResultSet rs = st.executeQuery("SELECT pg_backend_pid(), current_setting('cluster_name')")) {
            rs.next();
            pid = rs.getInt(1);
            cluster = rs.getString(2);
        }
        String prefix = "postgres: " + (cluster == null || cluster.isEmpty() ? "" : cluster + ": ") + user + " "
                + database + " ";
        long[] self = stat(pid);
        String title = cmdline(pid);
        if (self == null || title == null || !title.startsWith(prefix)) {
            return new ServerCpu(false, "not measured: the monitor's backend (pid " + pid + ") is not visible in /proc"
                    + " with the title '" + prefix + "…' (PostgreSQL on another machine or in another pid namespace?)",
                    0, pid, prefix);
        }
        int pm = (int) self[PPID];
        String pmComm = comm(pm);
        if (pmComm == null || !pmComm.startsWith("postgres")) {
            return new ServerCpu(false, "not measured: the parent of backend " + pid + " is not the postmaster ("
                    + pmComm + ")", 0, pid, prefix);
        }
        return new ServerCpu(true, "/proc/<pid>/stat utime+stime of the backends connected to database " + database
                + " (sampled every " + SAMPLE_MILLIS + " ms; the harness's monitor backend excluded), and of the whole"
                + " cluster (postmaster pid " + pm + " with its reaped children's cutime+cstime and every live child)",
                pm, pid, prefix);
    }

    boolean available() {
        return available;
    }

    String note() {
        return note;
    }

    private Window current;

    /**
     * Starts a measurement window: samples now, then every {@value #SAMPLE_MILLIS} ms until {@link Window#end}. A
     * window left open by a failed run stops sampling here.
     */
    synchronized Window begin() {
        if (current != null && current.sampler != null) {
            current.sampler.shutdownNow();
        }
        current = new Window();
        return current;
    }

    /** One measurement window; {@link #end} stops its sampler and returns the CPU spent inside it. */
    final class Window {
        private final Map<String, Long> baseline = new HashMap<>();
        private final Map<String, Long> last = new HashMap<>();
        private final long clusterStart;
        private final ScheduledExecutorService sampler;
        private int samples;

        private Window() {
            if (!available) {
                clusterStart = 0;
                sampler = null;
                return;
            }
            synchronized (this) {
                for (Map.Entry<String, Long> e : benchBackends().entrySet()) {
                    baseline.put(e.getKey(), e.getValue());
                    last.put(e.getKey(), e.getValue());
                }
            }
            clusterStart = clusterTicks();
            sampler = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "bench-server-cpu");
                t.setDaemon(true);
                return t;
            });
            sampler.scheduleAtFixedRate(this::sample, SAMPLE_MILLIS, SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
        }

        private synchronized void sample() {
            last.putAll(benchBackends());
            samples++;
        }

        /** Takes the last sample and stops sampling; a window without /proc access returns nulls. */
        Map<String, Object> end() {
            Map<String, Object> m = new LinkedHashMap<>();
            if (!available) {
                m.put("bench_backends_cpu_s", null);
                m.put("cluster_cpu_s", null);
                return m;
            }
            sampler.shutdownNow();
            try {
                sampler.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            long cluster = clusterTicks() - clusterStart;
            long bench = 0;
            synchronized (this) {
                last.putAll(benchBackends());
                for (Map.Entry<String, Long> e : last.entrySet()) {
                    bench += e.getValue() - baseline.getOrDefault(e.getKey(), 0L);
                }
                m.put("bench_backends_cpu_s", bench * nanosPerTick / 1e9);
                m.put("cluster_cpu_s", cluster * nanosPerTick / 1e9);
                m.put("bench_backends_seen", last.size());
                m.put("samples", samples + 1);
            }
            return m;
        }
    }

    // ------------------------------------------------------------------------------------------------ /proc

    private static final int PPID = 0;
    private static final int UTIME = 1;
    private static final int STIME = 2;
    private static final int CUTIME = 3;
    private static final int CSTIME = 4;
    private static final int STARTTIME = 5;

    /** utime+stime of the bench database's backends, keyed by pid:starttime (pids are reused). */
    private Map<String, Long> benchBackends() {
        Map<String, Long> out = new HashMap<>();
        for (int pid : children(postmasterPid)) {
            if (pid == monitorPid) {
                continue;
            }
            long[] st = stat(pid);
            if (st == null) {
                continue;
            }
            String key = pid + ":" + st[STARTTIME];
            Boolean bench = isBenchBackend.get(key);
            if (bench == null) {
                String title = cmdline(pid);
                if (title == null) {
                    continue;
                }
                bench = title.startsWith(titlePrefix);
                isBenchBackend.put(key, bench);
            }
            if (bench) {
                out.put(key, st[UTIME] + st[STIME]);
            }
        }
        return out;
    }

    /** Every tick the server has used: postmaster, reaped children, live children. */
    private long clusterTicks() {
        long[] pm = stat(postmasterPid);
        if (pm == null) {
            return 0;
        }
        long total = pm[UTIME] + pm[STIME] + pm[CUTIME] + pm[CSTIME];
        for (int pid : children(postmasterPid)) {
            long[] st = stat(pid);
            if (st != null) {
                total += st[UTIME] + st[STIME];
            }
        }
        return total;
    }

    private static List<Integer> children(int parent) {
        List<Integer> out = new ArrayList<>();
        Path list = Path.of("/proc", String.valueOf(parent), "task", String.valueOf(parent), "children");
        if (Files.isReadable(list)) {
            try {
                for (String p : Files.readString(list).trim().split("\\s+")) {
                    if (!p.isEmpty()) {
                        out.add(Integer.parseInt(p));
                    }
                }
                return out;
            } catch (IOException | NumberFormatException e) {
                out.clear();
            }
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : ds) {
                int pid = Integer.parseInt(p.getFileName().toString());
                long[] st = stat(pid);
                if (st != null && st[PPID] == parent) {
                    out.add(pid);
                }
            }
        } catch (IOException | RuntimeException e) {
            // nothing to add
        }
        return out;
    }

    /** ppid, utime, stime, cutime, cstime, starttime of {@code /proc/<pid>/stat}; null when the process is gone. */
    private static long[] stat(int pid) {
        String s;
        try {
            s = Files.readString(Path.of("/proc", String.valueOf(pid), "stat"));
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
        int close = s.lastIndexOf(')');
        if (close < 0) {
            return null;
        }
        String[] f = s.substring(close + 2).trim().split(" ");
        // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17, starttime 22
        try {
            return new long[] {Long.parseLong(f[1]), Long.parseLong(f[11]), Long.parseLong(f[12]),
                Long.parseLong(f[13]), Long.parseLong(f[14]), Long.parseLong(f[19])};
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String comm(int pid) {
        try {
            return Files.readString(Path.of("/proc", String.valueOf(pid), "comm")).trim();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String cmdline(int pid) {
        try {
            byte[] b = Files.readAllBytes(Path.of("/proc", String.valueOf(pid), "cmdline"));
            return new String(b, StandardCharsets.UTF_8).replace('\0', ' ');
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static long clockTicksPerSecond() {
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            if (p.waitFor(5, TimeUnit.SECONDS) && p.exitValue() == 0) {
                return Long.parseLong(out);
            }
        } catch (IOException | RuntimeException e) {
            // the Linux default below
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 100;
    }

    /** CPU time of this JVM process (all threads), in nanoseconds; -1 when the JVM does not report it. */
    static long jvmProcessCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }
}
