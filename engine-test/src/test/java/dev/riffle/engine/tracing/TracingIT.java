package dev.riffle.engine.tracing;

import static org.assertj.core.api.Assertions.assertThat;

import brave.handler.MutableSpan;
import brave.handler.SpanHandler;
import brave.propagation.TraceContext;
import brave.sampler.Sampler;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.RiffleObservation;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.tracing.JobTracing;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestKit;
import dev.riffle.engine.test.TestDatabase;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import io.micrometer.tracing.brave.bridge.BraveBaggageManager;
import io.micrometer.tracing.brave.bridge.BraveCurrentTraceContext;
import io.micrometer.tracing.brave.bridge.BravePropagator;
import io.micrometer.tracing.brave.bridge.BraveTracer;
import io.micrometer.tracing.brave.bridge.W3CPropagation;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * Tracing from enqueue to handler (docs/tracing.md): the observations' names, keys and parents in a
 * {@link TestObservationRegistry}; a real tracer (Brave, W3C propagation) on two engines, one enqueuing inside a
 * request span and the other running the jobs, whose handler spans continue the request's trace with the enqueue span
 * as parent, through the array, COPY, unique and scheduled enqueue paths and across a retry; and with tracing off,
 * nothing stored and the handler's {@code Mono} untouched.
 */
@RiffleTest
class TracingIT {
    private static final Duration T = Duration.ofSeconds(30);
    private static final String KEY = ObservationThreadLocalAccessor.KEY;

    @Test
    void theEngineReadsTheObservationUnderMicrometersContextKey() {
        assertThat(JobTracing.OBSERVATION_KEY).isEqualTo(ObservationThreadLocalAccessor.KEY);
    }

    @Test
    void observationsHaveTheirNamesKeysAndParents(TestDatabase db) {
        TestObservationRegistry registry = TestObservationRegistry.create();
        List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
        registry.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context);
            }
        });
        Riffle riffle = RiffleTestKit.startEngine(db, c -> c.observationRegistry(registry));
        try {
            String q = "observed";
            Observation request = Observation.start("test.request", registry);
            long ok = riffle.client().enqueue(NewJob.builder("obs.ok").queue(q).build())
                    .contextWrite(c -> c.put(KEY, request)).block(T);
            riffle.client().enqueueMany(List.of(NewJob.builder("obs.boom").queue(q).maxAttempts(1).build()))
                    .contextWrite(c -> c.put(KEY, request)).block(T);
            request.stop();
            // No tracer on this registry: nothing to propagate, so nothing is stored with the job.
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ? AND payload IS NULL", ok))
                    .isEqualTo(1);

            AtomicReference<Object> inHandler = new AtomicReference<>();
            Map<String, JobHandler> handlers = Map.of(
                    "obs.ok", job -> Mono.deferContextual(ctx -> {
                        inHandler.set(ctx.getOrDefault(KEY, null));
                        return Mono.just(JobOutcome.complete());
                    }),
                    "obs.boom", job -> Mono.error(new IllegalStateException("boom")));
            List<JobResult> results = riffle.work(handlers, 2, q).take(2).collectList().block(T);
            assertThat(results).hasSize(2).allMatch(JobResult::accepted);
            Await.until("the completion flush observed", T, () -> stopped.stream()
                    .anyMatch(c -> c.getName().equals("riffle.complete")));
            assertThat(stopped.stream().map(Observation.Context::getName).filter(n -> !n.equals("riffle.claim")
                    && !n.equals("riffle.complete")).sorted().toList()).as("stopped, each once")
                    .containsExactly("riffle.enqueue", "riffle.enqueue", "riffle.handle", "riffle.handle",
                            "test.request");

            TestObservationRegistryAssert.assertThat(registry)
                    .hasNumberOfObservationsWithNameEqualTo("riffle.enqueue", 2)
                    .forAllObservationsWithNameEqualTo("riffle.enqueue", o -> o
                            .hasParentObservationEqualTo(request)
                            .hasContextualNameEqualTo("enqueue " + q)
                            .hasLowCardinalityKeyValue("schema", db.schema())
                            .hasLowCardinalityKeyValue("queue", q)
                            .hasHighCardinalityKeyValue("riffle.jobs", "1"))
                    .hasAnObservation(o -> o.hasNameEqualTo("riffle.handle")
                            .hasContextualNameEqualTo("handle obs.ok")
                            .doesNotHaveParentObservation()
                            .hasLowCardinalityKeyValue("queue", q)
                            .hasLowCardinalityKeyValue("kind", "obs.ok")
                            .hasLowCardinalityKeyValue("outcome", "completed")
                            .hasHighCardinalityKeyValue("riffle.job.id", Long.toString(ok))
                            .hasHighCardinalityKeyValue("riffle.job.attempt", "1"))
                    .hasAnObservation(o -> o.hasNameEqualTo("riffle.handle")
                            .hasLowCardinalityKeyValue("kind", "obs.boom")
                            .hasLowCardinalityKeyValue("outcome", "error")
                            .hasError())
                    .hasAnObservation(o -> o.hasNameEqualTo("riffle.claim")
                            .doesNotHaveParentObservation()
                            .hasLowCardinalityKeyValue("queue", q)
                            .hasLowCardinalityKeyValue("outcome", "claimed"))
                    .hasAnObservation(o -> o.hasNameEqualTo("riffle.complete").doesNotHaveParentObservation());

            // The handler ran with its own observation in its Reactor Context.
            assertThat(inHandler.get()).isInstanceOf(Observation.class);
            Observation.Context handling = ((Observation) inHandler.get()).getContext();
            assertThat(handling.getName()).isEqualTo(RiffleObservation.HANDLE.observationName());
            assertThat(handling.getLowCardinalityKeyValue("kind").getValue()).isEqualTo("obs.ok");
        } finally {
            riffle.close().block(T);
        }
    }

    /** One process's tracer: Brave with W3C propagation, its finished spans collected. */
    private static final class Process {
        final brave.Tracing tracing;
        final ObservationRegistry registry = ObservationRegistry.create();

        Process(String name, List<MutableSpan> spans) {
            tracing = brave.Tracing.newBuilder().localServiceName(name).sampler(Sampler.ALWAYS_SAMPLE).traceId128Bit(true)
                    .propagationFactory(new W3CPropagation())
                    .addSpanHandler(new SpanHandler() {
                        @Override
                        public boolean end(TraceContext context, MutableSpan span, Cause cause) {
                            spans.add(span);
                            return true;
                        }
                    })
                    .build();
            BraveTracer tracer = new BraveTracer(tracing.tracer(),
                    new BraveCurrentTraceContext(tracing.currentTraceContext()), new BraveBaggageManager());
            BravePropagator propagator = new BravePropagator(tracing);
            registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
                    new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                    new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                    new DefaultTracingObservationHandler(tracer)));
        }
    }

    @Test
    void aTraceRunsFromTheEnqueuingRequestToTheHandlerInAnotherEngine(TestDatabase db) {
        String q = "traced";
        List<MutableSpan> spans = new CopyOnWriteArrayList<>();
        Process producer = new Process("producer", spans);
        Process worker = new Process("worker", spans);
        // Two engines on one schema, each with its own tracer: only what is stored with the job links them. The
        // producer takes the COPY path from two jobs on.
        Riffle enqueuing = RiffleTestKit.startEngine(db, c -> c.observationRegistry(producer.registry)
                .copyEnqueueThreshold(2));
        Riffle handling = RiffleTestKit.startEngine(db, c -> c.observationRegistry(worker.registry));
        try {
            Observation request = Observation.start("http.request", producer.registry);
            List<Long> ids = new CopyOnWriteArrayList<>();
            ids.add(enqueue(enqueuing.client().enqueue(NewJob.builder("flaky").queue(q).maxAttempts(2).build()),
                    request));
            ids.addAll(enqueue(enqueuing.client().enqueueMany(List.of(NewJob.builder("ok").queue(q).build(),
                    NewJob.builder("ok").queue(q).build())), request));
            ids.add(enqueue(enqueuing.client().enqueueWithResult(NewJob.builder("ok").queue(q).args("{\"a\":1}")
                    .unique(UniqueOptions.byArgs("a")).build()).map(r -> r.jobId()), request));
            ids.add(enqueue(enqueuing.client().enqueue(NewJob.builder("ok").queue(q)
                    .runAt(Instant.now().plusMillis(100)).build()), request));
            request.stop();

            Map<Long, String> payloads = new ConcurrentHashMap<>();
            Map<String, JobHandler> handlers = Map.of(
                    "ok", job -> handled(job, worker.registry, payloads, JobOutcome.complete()),
                    "flaky", job -> handled(job, worker.registry, payloads,
                            job.attempt() == 1 ? JobOutcome.retry("once", Duration.ZERO) : JobOutcome.complete()));
            // Six handler runs: the flaky job twice (its retry keeps the trace), the four others once.
            handling.work(handlers, 4, q).take(6).collectList().block(T);
            if (!Await.within(T, () -> named(spans, "handle ").size() == 6 && named(spans, "handler.child").size() == 6)) {
                throw new AssertionError("not every handler span ended: " + spans.stream()
                        .map(x -> x.name() + "/" + x.localServiceName()).toList());
            }

            MutableSpan root = named(spans, "http.request").get(0);
            List<MutableSpan> enqueues = named(spans, "enqueue " + q);
            assertThat(enqueues).hasSize(4).allSatisfy(s -> {
                assertThat(s.traceId()).isEqualTo(root.traceId());
                assertThat(s.parentId()).isEqualTo(root.id());
                assertThat(s.localServiceName()).isEqualTo("producer");
            });
            Set<String> enqueueIds = enqueues.stream().map(MutableSpan::id).collect(Collectors.toSet());
            List<MutableSpan> handles = named(spans, "handle ");
            assertThat(handles).allSatisfy(s -> {
                assertThat(s.traceId()).as("the request's trace").isEqualTo(root.traceId());
                assertThat(enqueueIds).as("parent: an enqueue span").contains(s.parentId());
                assertThat(s.localServiceName()).isEqualTo("worker");
                assertThat(s.kind()).isEqualTo(brave.Span.Kind.CONSUMER);
            });
            assertThat(handles.stream().map(MutableSpan::parentId).distinct()).as("one enqueue span per call")
                    .hasSize(4);
            List<MutableSpan> flaky = handles.stream().filter(s -> "flaky".equals(s.tag("kind"))).toList();
            assertThat(flaky).hasSize(2);
            assertThat(flaky.get(0).parentId()).as("the retry continues the same enqueue")
                    .isEqualTo(flaky.get(1).parentId());
            // The handler's own observation (found in its Reactor Context) is a child of the handle span.
            Set<String> handleIds = handles.stream().map(MutableSpan::id).collect(Collectors.toSet());
            assertThat(named(spans, "handler.child")).allSatisfy(s -> {
                assertThat(s.traceId()).isEqualTo(root.traceId());
                assertThat(handleIds).contains(s.parentId());
            });
            // What was stored: W3C traceparent in the engine's payload, beside the retry's error history.
            assertThat(payloads.keySet()).containsAll(ids);
            assertThat(payloads.values()).allSatisfy(p -> assertThat(p)
                    .containsPattern("\"trace\": \\{\"traceparent\": \"00-" + root.traceId() + "-[0-9a-f]{16}-01\"}"));
            assertThat(payloads.get(ids.get(0))).contains("\"errors\"");
        } finally {
            enqueuing.close().block(T);
            handling.close().block(T);
            producer.tracing.close();
            worker.tracing.close();
        }
    }

    private static <T> T enqueue(Mono<T> enqueue, Observation request) {
        return enqueue.contextWrite(c -> c.put(KEY, request)).block(T);
    }

    /** Records the payload of the job's last attempt and opens a child of the observation in the handler's context. */
    private static Mono<JobOutcome> handled(Job job, ObservationRegistry registry, Map<Long, String> payloads,
                                           JobOutcome outcome) {
        return Mono.deferContextual(ctx -> {
            String payload = job.payloadJson();
            if (payload != null) {
                payloads.put(job.id(), payload);
            }
            Observation.createNotStarted("handler.child", registry).parentObservation(ctx.get(KEY)).start().stop();
            return Mono.just(outcome);
        });
    }

    private static List<MutableSpan> named(List<MutableSpan> spans, String prefix) {
        return spans.stream().filter(s -> s.name() != null && s.name().startsWith(prefix)).toList();
    }

    @Test
    void withTracingOffNothingIsStoredAndTheHandlerIsUntouched(TestDatabase db) {
        String q = "untraced";
        Riffle riffle = RiffleTestKit.startEngine(db, c -> {});
        try {
            TestObservationRegistry elsewhere = TestObservationRegistry.create();
            Observation request = Observation.start("test.request", elsewhere);
            long id = enqueue(riffle.client().enqueue(NewJob.builder("plain").queue(q).build()), request);
            request.stop();
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ? AND payload IS NULL", id))
                    .isEqualTo(1);
            Job job = riffle.subscribe(q).next().block(T);
            Mono<Void> handler = Mono.empty();
            assertThat(job.observed(handler)).as("no observation, not even a wrapper").isSameAs(handler);
            assertThat(job.payloadJson()).isNull();
            job.complete().block(T);
        } finally {
            riffle.close().block(T);
        }
    }
}
