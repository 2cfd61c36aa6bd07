package dev.riffle.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The draining side of a drain run: one or more instances of one system on one queue, all reporting into one
 * {@link Tracker}. The harness calls {@link #open} (connected, no handlers yet), {@link #start} (every instance starts
 * its handlers), {@link #jvmCpuNanos} once the queue is drained, then {@link #stop}, which closes every connection.
 * {@link #close} is the cleanup after a failure and may be called at any time.
 */
interface Fleet extends AutoCloseable {

    /** Connects every instance (for Riffle: starts every engine). */
    void open() throws Exception;

    /** Starts every instance's handlers at about the same moment. */
    void start(Tracker tracker) throws Exception;

    /** CPU time of the JVM(s) running the instances since {@link #start}; -1 when unknown. */
    long jvmCpuNanos() throws Exception;

    /** Stops the handlers and closes everything; returns the instances' counters (summed, and per instance). */
    Map<String, Object> stop() throws Exception;

    /** What ran where, for the JSON. */
    Map<String, Object> describe();

    /** Best-effort cleanup; never throws. */
    @Override
    void close();

    /** Adds up the numeric counters of several instances; keeps the per-instance maps under {@code instances}. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> merge(List<Map<String, Object>> perInstance) {
        if (perInstance.size() == 1) {
            return perInstance.get(0);
        }
        Map<String, Object> sum = new LinkedHashMap<>();
        for (Map<String, Object> m : perInstance) {
            for (Map.Entry<String, Object> e : m.entrySet()) {
                Object v = e.getValue();
                Object prev = sum.get(e.getKey());
                if (v instanceof Number n && (prev == null || prev instanceof Number)) {
                    long add = n.longValue();
                    sum.put(e.getKey(), prev == null ? add : ((Number) prev).longValue() + add);
                } else if (v instanceof Boolean b && (prev == null || prev instanceof Boolean)) {
                    sum.put(e.getKey(), prev == null ? b : (Boolean) prev && b);
                } else if (!sum.containsKey(e.getKey())) {
                    sum.put(e.getKey(), v);
                }
            }
        }
        sum.put("instances", new ArrayList<Object>(perInstance));
        return sum;
    }
}
