package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.RiffleStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/** Micrometer side of {@link RiffleMetrics}; only loaded when a registry is configured. */
final class MicrometerBinding implements RiffleMetrics {
    private final MeterRegistry registry;
    private final List<Meter> meters = new ArrayList<>();
    // Micrometer holds a function meter's state object weakly; this strong reference keeps the meters alive as
    // long as the binding (owned by the engine) is.
    private final Supplier<RiffleStats> stats;

    private MicrometerBinding(MeterRegistry registry, Supplier<RiffleStats> stats) {
        this.registry = registry;
        this.stats = stats;
    }

    static RiffleMetrics bind(Object registryObject, String schema, Supplier<RiffleStats> stats) {
        if (!(registryObject instanceof MeterRegistry registry)) {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry, got "
                    + registryObject.getClass().getName());
        }
        MicrometerBinding b = new MicrometerBinding(registry, stats);
        Tags tags = Tags.of("schema", schema);
        b.counter(CLAIM_BATCHES, "claim statements that claimed jobs", tags, stats, s -> s.claimBatches());
        b.counter(CLAIMED_JOBS, "jobs claimed", tags, stats, s -> s.claimedJobs());
        b.counter(EMPTY_CLAIMS, "claim statements that found no job", tags, stats, s -> s.emptyClaims());
        b.counter(COMPLETION_BATCHES, "completion flushes (one statement and commit each)", tags, stats, s -> s.completionBatches());
        b.counter(COMPLETED, "completions accepted", tags, stats, s -> s.completed());
        b.counter(REJECTED, "completions rejected as stale or already closed", tags, stats, s -> s.rejected());
        b.counter(STALE_RESCUED, "attempts closed by stale rescue", tags, stats, s -> s.staleRescued());
        b.counter(DEADLINE_RESCUED, "attempts closed by deadline rescue", tags, stats, s -> s.deadlineRescued());
        b.counter(PRUNED_SLOTS, "ring slots truncated by prune", tags, stats, s -> s.prunedSlots());
        b.counter(LEASE_RESCUED, "attempts closed by lease-side rescue", tags, stats, s -> s.leaseRescued());
        b.counter(CALLBACKS_REGISTERED, "external-wait callbacks registered", tags, stats, s -> s.callbacksRegistered());
        b.counter(CALLBACKS_RESUMED, "callbacks resolved through this process", tags, stats, s -> s.callbacksResumed());
        b.meters.add(Gauge.builder(LEADER, stats, s -> s.get().leader() ? 1 : 0)
                .description("1 while this process is the maintenance leader").tags(tags).register(registry));
        b.meters.add(Gauge.builder(IN_FLIGHT, stats, s -> s.get().inFlight())
                .description("attempts delivered by this process and not finished").tags(tags).register(registry));
        b.meters.add(Gauge.builder(LISTENING, stats, s -> s.get().listening() ? 1 : 0)
                .description("1 while the LISTEN connection is up").tags(tags).register(registry));
        return b;
    }

    private void counter(String name, String description, Tags tags, Supplier<RiffleStats> stats,
                         ToDoubleFunction<RiffleStats> f) {
        meters.add(FunctionCounter.builder(name, stats, s -> f.applyAsDouble(s.get()))
                .description(description).tags(tags).register(registry));
    }

    @Override
    public void close() {
        meters.forEach(registry::remove);
    }
}
