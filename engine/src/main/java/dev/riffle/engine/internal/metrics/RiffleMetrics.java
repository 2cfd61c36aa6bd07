package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the engine's meters ({@link RiffleMeter}) to Micrometer when a registry is configured: function meters
 * over the engine's stats snapshot, and the events its mechanisms {@link #record} (timers, summaries, tagged counters
 * and cached gauges). Micrometer is an optional dependency: the Micrometer types live only in
 * {@link MicrometerBinding}, which is loaded only when a registry was given, so the engine runs without Micrometer on
 * the classpath.
 */
public interface RiffleMetrics extends AutoCloseable, Recorder {

    @Override
    void close();

    /**
     * One meter read from a snapshot type {@code S} (a counter fed cumulative totals, or a gauge). The engine names its
     * meters over its own stats record, so this package needs no engine type.
     */
    record Meter<S>(RiffleMeter meter, ToDoubleFunction<S> value) {
        /** Refuses a meter that is neither a counter nor a gauge, or that has tags besides the schema. */
        public Meter {
            if (meter.type() != RiffleMeter.Type.COUNTER && meter.type() != RiffleMeter.Type.GAUGE
                    || !meter.tags().isEmpty()) {
                throw new IllegalArgumentException(meter + " cannot be read from a snapshot");
            }
        }
    }

    /**
     * Binds {@code meters}, each read from a fresh {@code stats} snapshot, to {@code registry} (a Micrometer
     * {@code MeterRegistry}) tagged with the schema, plus the untagged event meters; or returns a no-op when the
     * registry is null. Latencies from database timestamps are measured against {@code clock}.
     */
    static <S> RiffleMetrics bind(@Nullable Object registry, String schema, java.time.Clock clock, Supplier<S> stats,
                                  List<Meter<S>> meters) {
        if (registry == null) {
            return new RiffleMetrics() {
                @Override
                public void close() {}

                @Override
                public boolean enabled() {
                    return false;
                }

                @Override
                public void record(RiffleMeter meter, double value, String... tagValues) {}

                @Override
                public double nanosSince(java.time.Instant t) {
                    return 0;
                }
            };
        }
        return MicrometerBinding.bind(registry, schema, clock, stats, meters);
    }
}
