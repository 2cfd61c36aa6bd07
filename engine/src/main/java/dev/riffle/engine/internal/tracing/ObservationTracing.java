package dev.riffle.engine.internal.tracing;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.api.RiffleObservation;
import dev.riffle.engine.internal.metrics.TagCap;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.Kind;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * The Micrometer side of {@link JobTracing}; only loaded when a registry is configured. Propagation is Micrometer's
 * own: the enqueue observation has a {@link SenderContext} whose carrier is a map the tracer's propagator writes
 * ({@code traceparent}, ...) and which is stored with the job; the handler observation has a {@link ReceiverContext}
 * reading it back, so the tracer continues the enqueuing trace, in whichever process claims the job.
 */
final class ObservationTracing implements JobTracing {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.tracing");
    private static final String SCHEMA = RiffleMeter.SCHEMA_TAG;
    private static final String QUEUE = "queue";
    private static final String KIND = "kind";
    private static final String OUTCOME = "outcome";

    private final ObservationRegistry registry;
    private final String schema;
    private final TagCap cap = new TagCap(RiffleMeter.MAX_TAG_VALUES);

    private ObservationTracing(ObservationRegistry registry, String schema) {
        this.registry = registry;
        this.schema = schema;
    }

    static JobTracing of(Object registryObject, String schema) {
        if (!(registryObject instanceof ObservationRegistry registry)) {
            throw new IllegalArgumentException("observationRegistry must be an "
                    + "io.micrometer.observation.ObservationRegistry, got " + registryObject.getClass().getName());
        }
        return registry.isNoop() ? NONE : new ObservationTracing(registry, schema);
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public <T> Mono<T> enqueue(List<NewJob> jobs, Function<@Nullable String, Mono<T>> write) {
        return Mono.deferContextual(view -> {
            Object fromContext = view.getOrDefault(OBSERVATION_KEY, null);
            Observation parent = fromContext instanceof Observation o ? o : registry.getCurrentObservation();
            Map<String, String> carrier = new LinkedHashMap<>();
            SenderContext<Map<String, String>> context = new SenderContext<>(ObservationTracing::put, Kind.PRODUCER);
            context.setCarrier(carrier);
            String queue = queueOf(jobs);
            Observation obs = Observation.createNotStarted(RiffleObservation.ENQUEUE.observationName(),
                            () -> context, registry)
                    .parentObservation(parent)
                    .contextualName(RiffleObservation.ENQUEUE.contextualName() + " " + queue)
                    .lowCardinalityKeyValue(SCHEMA, schema)
                    .lowCardinalityKeyValue(QUEUE, cap.cap(QUEUE, queue))
                    .highCardinalityKeyValue("riffle.jobs", Integer.toString(jobs.size()))
                    .start();
            // The tracer's propagator filled the carrier on start; empty when there is nothing to propagate.
            return observe(obs, write.apply(TraceCarrier.toJson(carrier)), null);
        });
    }

    private static void put(@Nullable Map<String, String> carrier, String key, String value) {
        if (carrier != null) {
            carrier.put(key, value);
        }
    }

    private static String queueOf(List<NewJob> jobs) {
        String queue = jobs.get(0).queue();
        for (NewJob j : jobs) {
            if (!queue.equals(j.queue())) {
                return RiffleObservation.SEVERAL_QUEUES;
            }
        }
        return queue;
    }

    @Override
    public <T> Mono<T> claim(String[] queues, Mono<T> claim, ToIntFunction<? super T> claimed) {
        return Mono.defer(() -> {
            String queue = cap.cap(QUEUE, String.join(",", queues));
            Observation obs = batch(RiffleObservation.CLAIM, queue)
                    .lowCardinalityKeyValue(QUEUE, queue)
                    .start();
            return observe(obs, claim, r -> {
                int n = claimed.applyAsInt(r);
                obs.highCardinalityKeyValue("riffle.jobs", Integer.toString(n));
                return n > 0 ? "claimed" : "empty";
            });
        });
    }

    @Override
    public <T> Mono<T> complete(int outcomes, Mono<T> flush) {
        return Mono.defer(() -> {
            Observation obs = batch(RiffleObservation.COMPLETE, null)
                    .highCardinalityKeyValue("riffle.outcomes", Integer.toString(outcomes))
                    .start();
            return observe(obs, flush, null);
        });
    }

    /** A batch observation: no parent, whatever happens to be current on the thread that runs the batch. */
    private Observation batch(RiffleObservation which, @Nullable String suffix) {
        return Observation.createNotStarted(which.observationName(), registry)
                .parentObservation(null)
                .contextualName(suffix == null ? which.contextualName() : which.contextualName() + " " + suffix)
                .lowCardinalityKeyValue(SCHEMA, schema);
    }

    @Override
    public <T> Mono<T> handle(Job job, Mono<T> handler, Function<? super T, @Nullable String> outcome) {
        return Mono.defer(() -> {
            ReceiverContext<Map<String, String>> context = new ReceiverContext<>(Map::get, Kind.CONSUMER);
            context.setCarrier(TraceCarrier.fromPayload(job.payloadJson()));
            // The parent is the trace stored with the job (read by the tracer from the carrier), not whatever is
            // current on the thread that delivers it.
            Observation obs = Observation.createNotStarted(RiffleObservation.HANDLE.observationName(),
                            () -> context, registry)
                    .parentObservation(null)
                    .contextualName(RiffleObservation.HANDLE.contextualName() + " " + job.kind())
                    .lowCardinalityKeyValue(SCHEMA, schema)
                    .lowCardinalityKeyValue(QUEUE, cap.cap(QUEUE, job.queue()))
                    .lowCardinalityKeyValue(KIND, cap.cap(KIND, job.kind()))
                    .highCardinalityKeyValue("riffle.job.id", Long.toString(job.id()))
                    .highCardinalityKeyValue("riffle.job.attempt", Integer.toString(job.attempt()))
                    .start();
            return observe(obs, handler.contextWrite(c -> c.put(OBSERVATION_KEY, obs)), outcome);
        });
    }

    /**
     * {@code work} with {@code obs} stopped when it ends: an error recorded on it, the {@code outcome} key set from
     * an emitted value (null function: none), {@code error} or {@code interrupted} otherwise.
     */
    private static <T> Mono<T> observe(Observation obs, Mono<T> work,
                                       @Nullable Function<? super T, @Nullable String> outcome) {
        AtomicReference<@Nullable String> word = new AtomicReference<>();
        return work
                .doOnNext(v -> {
                    if (outcome != null) {
                        word.set(outcome.apply(v));
                    }
                })
                .doOnError(e -> {
                    word.set("error");
                    obs.error(e);
                })
                .doFinally(signal -> stop(obs, outcome == null ? null
                        : signal == SignalType.CANCEL ? "interrupted"
                        : word.get() != null ? word.get() : "completed"));
    }

    private static void stop(Observation obs, @Nullable String outcome) {
        // An observation handler of the application's must never break the engine's work, nor throw on a scheduler.
        try {
            if (outcome != null) {
                obs.lowCardinalityKeyValue(OUTCOME, outcome);
            }
            obs.stop();
        } catch (RuntimeException e) {
            log.debug("stopping observation {} failed: {}", obs, e.toString());
        }
    }
}
