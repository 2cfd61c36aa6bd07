package dev.riffle.engine.api;

import java.util.List;

/**
 * Every Micrometer Observation the engine opens, the single source of their names and key values (docs/tracing.md's
 * table is checked against this enum by a test). Observations exist only when an {@code ObservationRegistry} is
 * configured ({@code RiffleConfig.Builder.observationRegistry}); Micrometer stays an optional dependency.
 *
 * <p>Every observation carries the low-cardinality key {@code schema}. {@code queue} and {@code kind} keep at most
 * {@link RiffleMeter#MAX_TAG_VALUES} distinct values per engine; further values read
 * {@link RiffleMeter#OTHER_TAG_VALUE}. The trace context current at {@link #ENQUEUE} is stored with the job and
 * continued by {@link #HANDLE}, in whichever process runs the job.
 */
public enum RiffleObservation {
    /** One enqueue call: a batch, on the engine's pool or the caller's connection. */
    ENQUEUE("riffle.enqueue", "enqueue", List.of("queue"), List.of("riffle.jobs"),
            "one enqueue call (a batch); producer side: its trace context is stored with every job of the batch. "
                    + "Parent: the observation in the enqueue Mono's Reactor Context, else the current one. queue "
                    + "is the batch's queue, or \"several\" for a batch over more than one"),
    /** One claim statement. */
    CLAIM("riffle.claim", "claim", List.of("queue", "outcome"), List.of("riffle.jobs"),
            "one claim statement of a subscription; queue is the subscription's queues joined by ',', outcome is "
                    + "claimed, empty (idle polls and busy lanes included), error or interrupted. No parent"),
    /** One handler run of one attempt. */
    HANDLE("riffle.handle", "handle", List.of("queue", "kind", "outcome"),
            List.of("riffle.job.id", "riffle.job.attempt"),
            "one handler run of one attempt; consumer side: continues the trace stored with the job at enqueue, and "
                    + "is in the handler's Reactor Context while it runs (work(...), or Job.observed for "
                    + "subscribe()). outcome: completed, retried, snoozed, failed, cancelled (the handler's "
                    + "JobOutcome, with the words of riffle.job.outcomes), error (the handler failed; work(...) "
                    + "retries it), interrupted (the handler was cancelled, e.g. the attempt was taken away)"),
    /** One completion flush. */
    COMPLETE("riffle.complete", "complete", List.of(), List.of("riffle.outcomes"),
            "one completion flush: the batched outcomes of many attempts, one statement and commit. No parent");

    /** The value of {@code queue} for an enqueue batch over more than one queue: {@value}. */
    public static final String SEVERAL_QUEUES = "several";

    private final String observationName;
    private final String contextualName;
    private final List<String> lowCardinalityKeys;
    private final List<String> highCardinalityKeys;
    private final String description;

    RiffleObservation(String observationName, String contextualName, List<String> lowCardinalityKeys,
                      List<String> highCardinalityKeys, String description) {
        this.observationName = observationName;
        this.contextualName = contextualName;
        this.lowCardinalityKeys = lowCardinalityKeys;
        this.highCardinalityKeys = highCardinalityKeys;
        this.description = description;
    }

    /** The observation's name (a timer of that name under Micrometer's meter handler). */
    public String observationName() {
        return observationName;
    }

    /** The first word of the span name; the queue or kind follows it ({@code handle invoice.send}). */
    public String contextualName() {
        return contextualName;
    }

    /** Low-cardinality keys besides {@code schema}, in the order the engine sets them. */
    public List<String> lowCardinalityKeys() {
        return lowCardinalityKeys;
    }

    /** High-cardinality keys (span tags, never meter tags). */
    public List<String> highCardinalityKeys() {
        return highCardinalityKeys;
    }

    /** What it observes. */
    public String description() {
        return description;
    }
}
