package dev.riffle.engine.internal.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/** Micrometer side of {@link RiffleMetrics}; only loaded when a registry is configured. */
final class MicrometerBinding<S> implements RiffleMetrics {
    private final MeterRegistry registry;
    private final List<io.micrometer.core.instrument.Meter> meters = new ArrayList<>();
    // Micrometer holds a function meter's state object weakly; this strong reference keeps the meters alive as
    // long as the binding (owned by the engine) is.
    private final Supplier<S> stats;

    private MicrometerBinding(MeterRegistry registry, Supplier<S> stats) {
        this.registry = registry;
        this.stats = stats;
    }

    static <S> RiffleMetrics bind(Object registryObject, String schema, Supplier<S> stats, List<Meter<S>> specs) {
        if (!(registryObject instanceof MeterRegistry registry)) {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry, got "
                    + registryObject.getClass().getName());
        }
        MicrometerBinding<S> b = new MicrometerBinding<>(registry, stats);
        Tags tags = Tags.of("schema", schema);
        for (Meter<S> m : specs) {
            b.meters.add(m.gauge()
                    ? Gauge.builder(m.name(), stats, s -> m.value().applyAsDouble(s.get()))
                            .description(m.description()).tags(tags).register(registry)
                    : FunctionCounter.builder(m.name(), stats, s -> m.value().applyAsDouble(s.get()))
                            .description(m.description()).tags(tags).register(registry));
        }
        return b;
    }

    @Override
    public void close() {
        meters.forEach(registry::remove);
    }
}
