package dev.riffle.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * The warm-up rule shared by the harness ({@link BenchMain}) and its child JVMs ({@link WorkerMain}): a warm-up pass
 * is repeated until the JIT compiled for less than {@link #SETTLED} of the pass's wall time, at most
 * {@link #MAX_PASSES} passes. One pass at W=64 with no handler work used to be all: the measured drains with a 1 ms
 * handler then ran on code still being compiled (C2 threads at about 40 % of the harness JVM's CPU during the first
 * 10 s of a measured W=64, 1 ms drain, /proc per-thread times), which charged JIT time to whichever system ran first.
 */
final class JitSettle {

    /** Warm-up passes at most. */
    static final int MAX_PASSES = 5;
    /** A pass in which the JIT compiled for less than this fraction of its wall time ends the warm-up. */
    static final double SETTLED = 0.05;

    private static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();
    private static final boolean TIMED = JIT != null && JIT.isCompilationTimeMonitoringSupported();

    private final long compileMillis0 = compileMillis();
    private final long nanos0 = System.nanoTime();

    /** The JIT's accumulated compile time in this JVM, ms; -1 when this JVM does not report it. */
    static long compileMillis() {
        return TIMED ? JIT.getTotalCompilationTime() : -1;
    }

    /** Starts timing one pass. */
    static JitSettle pass() {
        return new JitSettle();
    }

    /** Wall seconds since the pass started. */
    double seconds() {
        return (System.nanoTime() - nanos0) / 1e9;
    }

    /** The JIT's compile time as a fraction of the pass's wall time; null when this JVM does not report it. */
    Double share() {
        return TIMED ? (compileMillis() - compileMillis0) / 1e3 / seconds() : null;
    }

    /** The share as "12 %", or "unknown". */
    static String format(Double share) {
        return share == null ? "unknown" : String.format(java.util.Locale.ROOT, "%.0f %%", share * 100);
    }

    /** True when another pass is not needed: the JIT settled, or its time is not known. */
    static boolean settled(Double share) {
        return share == null || share < SETTLED;
    }
}
