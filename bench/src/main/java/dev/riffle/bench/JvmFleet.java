package dev.riffle.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * N instances of one system in the harness JVM, each with its own connections (for Riffle: its own engine and
 * pool), W handlers each. JVM CPU is the whole harness process (producer and bookkeeping included).
 */
final class JvmFleet implements Fleet {

    private final Supplier<QueueSystem> factory;
    private final int instances;
    private final int workers;
    private final Duration delay;
    private final List<QueueSystem> systems = new ArrayList<>();
    private long cpuAtStart = -1;

    JvmFleet(Supplier<QueueSystem> factory, int instances, int workers, Duration delay) {
        this.factory = factory;
        this.instances = instances;
        this.workers = workers;
        this.delay = delay;
    }

    @Override
    public void open() throws Exception {
        for (int i = 0; i < instances; i++) {
            QueueSystem s = factory.get();
            systems.add(s);
            s.open();
        }
    }

    @Override
    public void start(Tracker tracker) throws Exception {
        cpuAtStart = ServerCpu.jvmProcessCpuNanos();
        for (QueueSystem s : systems) {
            s.startWorkers(workers, delay, tracker);
        }
    }

    @Override
    public long jvmCpuNanos() {
        long now = ServerCpu.jvmProcessCpuNanos();
        return cpuAtStart < 0 || now < 0 ? -1 : now - cpuAtStart;
    }

    @Override
    public Map<String, Object> stop() throws Exception {
        for (QueueSystem s : systems) {
            s.stopWorkers();
        }
        List<Map<String, Object>> counters = new ArrayList<>();
        for (QueueSystem s : systems) {
            counters.add(new LinkedHashMap<>(s.counters()));
            s.close();
        }
        return Fleet.merge(counters);
    }

    @Override
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("fleet", "jvm");
        m.put("instances", instances);
        m.put("workers_per_instance", workers);
        return m;
    }

    @Override
    public void close() {
        for (QueueSystem s : systems) {
            try {
                s.close();
            } catch (RuntimeException e) {
                // best effort
            }
        }
    }
}
