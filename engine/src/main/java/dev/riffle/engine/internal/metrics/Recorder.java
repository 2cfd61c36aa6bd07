package dev.riffle.engine.internal.metrics;

import dev.riffle.engine.api.RiffleMeter;

/**
 * Where the engine's mechanisms report events for the meters of {@link RiffleMeter}. Free of Micrometer types: the
 * no-op {@link #NONE} is used when no registry is configured, so callers only pay for an {@link #enabled()} check.
 */
public interface Recorder {

    /** Records nothing. */
    Recorder NONE = new Recorder() {
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

    /** Whether anything is recorded; callers skip computing values when not. */
    boolean enabled();

    /**
     * Records {@code value} for {@code meter}: a counter's increment, a timer's duration in nanoseconds, a summary's
     * amount, or a gauge's new value. {@code tagValues} align with {@link RiffleMeter#tags()}; {@code queue} and
     * {@code kind} values beyond the cap are tagged {@link RiffleMeter#OTHER_TAG_VALUE}. Never throws.
     */
    void record(RiffleMeter meter, double value, String... tagValues);

    /**
     * Nanoseconds from {@code t} (a database timestamp such as a job's {@code created_at}) to now on the engine's
     * clock, at least 0: the two clocks may disagree (docs/operations.md, "Clocks").
     */
    double nanosSince(java.time.Instant t);
}
