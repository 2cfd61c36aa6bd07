package dev.riffle.engine.internal.tracing;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import java.util.List;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Where the engine's mechanisms open their observations ({@link dev.riffle.engine.api.RiffleObservation}). Free of
 * Micrometer types: {@link #NONE} is used when no {@code ObservationRegistry} is configured, and then every method
 * hands its work back unchanged, so the engine runs without Micrometer on the classpath (the Micrometer side lives
 * only in {@link ObservationTracing}, loaded only when a registry was given).
 */
public interface JobTracing {

    /**
     * The Reactor Context key under which the current observation travels: Micrometer's
     * {@code ObservationThreadLocalAccessor.KEY}, spelled out so that reading it loads no Micrometer class
     * ({@code TracingContractTest} holds the two equal).
     */
    String OBSERVATION_KEY = "micrometer.observation";

    /** Observes nothing and stores no trace context. */
    JobTracing NONE = new JobTracing() {
        @Override
        public boolean enabled() {
            return false;
        }

        @Override
        public <T> Mono<T> enqueue(List<NewJob> jobs, Function<@Nullable String, Mono<T>> write) {
            return write.apply(null);
        }

        @Override
        public <T> Mono<T> claim(String[] queues, Mono<T> claim, ToIntFunction<? super T> claimed) {
            return claim;
        }

        @Override
        public <T> Mono<T> handle(Job job, Mono<T> handler, Function<? super T, @Nullable String> outcome) {
            return handler;
        }

        @Override
        public <T> Mono<T> complete(int outcomes, Mono<T> flush) {
            return flush;
        }
    };

    /**
     * Observations in {@code registry} (a Micrometer {@code ObservationRegistry}), tagged with {@code schema}, or
     * {@link #NONE} when it is null or the no-op registry.
     *
     * @throws IllegalArgumentException when {@code registry} is not an {@code ObservationRegistry}
     */
    static JobTracing of(@Nullable Object registry, String schema) {
        return registry == null ? NONE : ObservationTracing.of(registry, schema);
    }

    /** Whether anything is observed. */
    boolean enabled();

    /**
     * Runs {@code write} inside the enqueue observation of {@code jobs} (one per batch), whose parent is the
     * observation in the subscriber's Reactor Context, else the current one. {@code write} gets the trace context to
     * store with the jobs as a JSON object (e.g. {@code {"traceparent": "00-…"}}), or null when there is none to
     * propagate (no tracer, or tracing off): then nothing is stored.
     */
    <T> Mono<T> enqueue(List<NewJob> jobs, Function<@Nullable String, Mono<T>> write);

    /** {@code claim} (one claim statement over {@code queues}) observed; {@code claimed} counts its jobs. */
    <T> Mono<T> claim(String[] queues, Mono<T> claim, ToIntFunction<? super T> claimed);

    /**
     * {@code handler} run inside {@code job}'s handler observation, which continues the trace stored with the job at
     * enqueue and is in {@code handler}'s Reactor Context under {@link #OBSERVATION_KEY} while it runs.
     * {@code outcome} names the outcome of an emitted value (null: {@code completed}); an error is {@code error}, a
     * cancelled handler {@code interrupted}.
     */
    <T> Mono<T> handle(Job job, Mono<T> handler, Function<? super T, @Nullable String> outcome);

    /** {@code flush} (one completion flush of {@code outcomes} outcomes) observed. */
    <T> Mono<T> complete(int outcomes, Mono<T> flush);
}
