package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Micrometer side of {@link RiffleMetrics}; only loaded when a registry is configured. */
final class MicrometerBinding<S> implements RiffleMetrics {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.metrics");

    private record Key(RiffleMeter meter, List<String> tagValues) {}

    private final MeterRegistry registry;
    private final String schema;
    private final Set<io.micrometer.core.instrument.Meter> meters = ConcurrentHashMap.newKeySet();
    /** Event meters by meter and tag values: a Counter, Timer, DistributionSummary, or a gauge's value holder. */
    private final Map<Key, Object> byKey = new ConcurrentHashMap<>();
    private final TagCap cap = new TagCap(RiffleMeter.MAX_TAG_VALUES);
    // Micrometer holds a function meter's state object weakly; this strong reference keeps the meters alive as
    // long as the binding (owned by the engine) is.
    private final Supplier<S> stats;
    private final java.time.Clock clock;
    private volatile boolean closed;

    private MicrometerBinding(MeterRegistry registry, String schema, java.time.Clock clock, Supplier<S> stats) {
        this.registry = registry;
        this.clock = clock;
        this.schema = schema;
        this.stats = stats;
    }

    static <S> RiffleMetrics bind(Object registryObject, String schema, java.time.Clock clock, Supplier<S> stats,
                                  List<Meter<S>> specs) {
        if (!(registryObject instanceof MeterRegistry registry)) {
            throw new IllegalArgumentException("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry, got "
                    + registryObject.getClass().getName());
        }
        MicrometerBinding<S> b = new MicrometerBinding<>(registry, schema, clock, stats);
        Tags tags = Tags.of(RiffleMeter.SCHEMA_TAG, schema);
        Set<RiffleMeter> bound = java.util.EnumSet.noneOf(RiffleMeter.class);
        for (Meter<S> m : specs) {
            RiffleMeter rm = m.meter();
            bound.add(rm);
            b.meters.add(rm.type() == RiffleMeter.Type.GAUGE
                    ? Gauge.builder(rm.meterName(), stats, s -> m.value().applyAsDouble(s.get()))
                            .description(rm.description()).baseUnit(unit(rm)).tags(tags).register(registry)
                    : FunctionCounter.builder(rm.meterName(), stats, s -> m.value().applyAsDouble(s.get()))
                            .description(rm.description()).baseUnit(unit(rm)).tags(tags).register(registry));
        }
        // Event meters without tags of their own exist from the start (at zero), so a dashboard sees them at once.
        for (RiffleMeter rm : RiffleMeter.values()) {
            if (!bound.contains(rm) && rm.tags().isEmpty() && rm.type() != RiffleMeter.Type.GAUGE) {
                b.meterFor(new Key(rm, List.of()));
            }
        }
        return b;
    }

    private static @org.jspecify.annotations.Nullable String unit(RiffleMeter m) {
        return m.unit().isEmpty() ? null : m.unit();
    }

    @Override
    public boolean enabled() {
        return !closed;
    }

    @Override
    public void record(RiffleMeter meter, double value, String... tagValues) {
        if (closed) {
            return;
        }
        try {
            List<String> keys = meter.tags();
            if (tagValues.length != keys.size()) {
                log.warn("meter {} recorded with {} tag values for tags {}; ignored", meter, tagValues.length, keys);
                return;
            }
            String[] capped = new String[tagValues.length];
            for (int i = 0; i < capped.length; i++) {
                capped[i] = cap.cap(keys.get(i), tagValues[i]);
            }
            Object m = meterFor(new Key(meter, List.of(capped)));
            switch (meter.type()) {
                case COUNTER -> ((Counter) m).increment(value);
                case TIMER -> ((Timer) m).record((long) value, TimeUnit.NANOSECONDS);
                case SUMMARY -> ((DistributionSummary) m).record(value);
                case GAUGE -> ((AtomicLong) m).set(Double.doubleToRawLongBits(value));
            }
        } catch (RuntimeException e) {
            // A meter must never break the engine's work.
            log.debug("recording {} failed: {}", meter, e.toString());
        }
    }

    @Override
    public double nanosSince(java.time.Instant t) {
        java.time.Instant now = clock.instant();
        long s = now.getEpochSecond() - t.getEpochSecond();
        double n = s * 1e9 + (now.getNano() - t.getNano());
        return Math.max(0, n);
    }

    private Object meterFor(Key key) {
        Object m = byKey.get(key);
        if (m != null) {
            return m;
        }
        m = byKey.computeIfAbsent(key, this::register);
        if (closed) {
            // Raced with close(): take out what this call may have registered after close emptied the registry.
            meters.forEach(registry::remove);
            meters.clear();
        }
        return m;
    }

    private Object register(Key key) {
        RiffleMeter rm = key.meter();
        Tags tags = Tags.of(RiffleMeter.SCHEMA_TAG, schema);
        for (int i = 0; i < key.tagValues().size(); i++) {
            tags = tags.and(rm.tags().get(i), key.tagValues().get(i));
        }
        return switch (rm.type()) {
            case COUNTER -> keep(Counter.builder(rm.meterName()).description(rm.description()).baseUnit(unit(rm))
                    .tags(tags).register(registry));
            case TIMER -> keep(Timer.builder(rm.meterName()).description(rm.description()).tags(tags)
                    .register(registry));
            case SUMMARY -> keep(DistributionSummary.builder(rm.meterName()).description(rm.description())
                    .baseUnit(unit(rm)).tags(tags).register(registry));
            case GAUGE -> {
                AtomicLong holder = new AtomicLong(Double.doubleToRawLongBits(Double.NaN));
                meters.add(Gauge.builder(rm.meterName(), holder, h -> Double.longBitsToDouble(h.get()))
                        .description(rm.description()).baseUnit(unit(rm)).tags(tags).strongReference(true)
                        .register(registry));
                yield holder;
            }
        };
    }

    private <M extends io.micrometer.core.instrument.Meter> M keep(M m) {
        meters.add(m);
        return m;
    }

    @Override
    public void close() {
        closed = true;
        meters.forEach(registry::remove);
        meters.clear();
        byKey.clear();
    }
}
