package dev.riffle.engine.api;

import java.util.List;

/**
 * Every Micrometer meter the engine registers, the single source of their names, types, units, tags and meaning
 * (docs/operations.md's table is checked against this enum by a test, and so is a live registry). Meters exist only
 * when a {@code MeterRegistry} is configured ({@code RiffleConfig.Builder.meterRegistry}); Micrometer stays an
 * optional dependency.
 *
 * <p>Every meter carries the {@code schema} tag. Meters tagged {@code queue} or {@code kind} keep at most
 * {@link #MAX_TAG_VALUES} distinct values per tag and engine; further values are tagged {@link #OTHER_TAG_VALUE}, so
 * a producer inventing kinds cannot blow up the registry.
 */
public enum RiffleMeter {
    /** Claim statements that claimed jobs (one claim batch row each). */
    CLAIM_BATCHES("riffle.claim.batches", Type.COUNTER, "batches", List.of(), "claim statements that claimed jobs", ""),
    /** Jobs claimed. */
    CLAIMED_JOBS("riffle.claim.jobs", Type.COUNTER, "jobs", List.of(), "jobs claimed", ""),
    /** Claim statements that found nothing. */
    EMPTY_CLAIMS("riffle.claim.empty", Type.COUNTER, "claims", List.of(), "claim statements that found no job", ""),
    /** Claims that read the queue ring child by child around a prune's lock. */
    CLAIM_LOCK_DETOURS("riffle.claim.lock_detours", Type.COUNTER, "claims", List.of(),
            "claims that went around a queue-ring child locked by a prune", ""),
    /** Claim round trip. */
    CLAIM_DURATION("riffle.claim.duration", Type.TIMER, "seconds", List.of(),
            "claim round trip (statement and commit), empty claims included", "p99 above 100 ms: database saturated"),
    /** Jobs per claim that claimed some. */
    CLAIM_BATCH_SIZE("riffle.claim.batch.size", Type.SUMMARY, "jobs", List.of(), "jobs per claim that claimed jobs",
            ""),
    /** Claim statements in flight. */
    CLAIMS_RUNNING("riffle.claims.running", Type.GAUGE, "claims", List.of(),
            "claim statements of this process in flight", ""),
    /** Attempts delivered and not finished. */
    IN_FLIGHT("riffle.jobs.in_flight", Type.GAUGE, "jobs", List.of(),
            "attempts delivered by this process and not finished", ""),
    /** Enqueue to handler start. */
    PICKUP_LATENCY("riffle.job.pickup", Type.TIMER, "seconds", List.of("queue", "kind"),
            "first attempts under work(...): the job's created_at (database clock, at enqueue) to its handler's "
                    + "start (this process's clock); includes a scheduled job's delay", "p99 growing: add workers"),
    /** Handler run time under work(...). */
    HANDLER_DURATION("riffle.job.handler", Type.TIMER, "seconds", List.of("queue", "kind"),
            "handler run time under work(...), from subscription to outcome", ""),
    /** Enqueue to durable completion. */
    END_TO_END_LATENCY("riffle.job.latency", Type.TIMER, "seconds", List.of("queue", "kind"),
            "successful jobs: created_at (database clock) to durable completion (this process's clock)", ""),
    /** Outcomes by kind. */
    OUTCOMES("riffle.job.outcomes", Type.COUNTER, "jobs", List.of("queue", "kind", "outcome"),
            "recorded outcomes; outcome is completed, retried, snoozed, failed (terminal: a failure, or a retry "
                    + "with no attempt left; the queue's DLQ policy decides whether it lands in the DLQ), cancelled,"
                    + " released or rejected (stale or already closed)", "rate of failed above normal"),
    /** Completion flushes. */
    COMPLETION_BATCHES("riffle.complete.batches", Type.COUNTER, "batches", List.of(),
            "completion flushes (one statement and commit each)", ""),
    /** Completion flush duration. */
    FLUSH_DURATION("riffle.complete.flush.duration", Type.TIMER, "seconds", List.of(),
            "completion flush, from its start to durability (retries through an outage included)", ""),
    /** Outcomes per completion flush. */
    FLUSH_BATCH_SIZE("riffle.complete.flush.size", Type.SUMMARY, "outcomes", List.of(), "outcomes per completion flush",
            ""),
    /** Completions accepted. */
    COMPLETED("riffle.complete.accepted", Type.COUNTER, "jobs", List.of(), "completions accepted", ""),
    /** Non-success outcomes accepted. */
    CLOSED("riffle.complete.closed", Type.COUNTER, "jobs", List.of(),
            "non-success outcomes accepted (retry, snooze, fail, cancel, release)", ""),
    /** Outcomes rejected. */
    REJECTED("riffle.complete.rejected", Type.COUNTER, "jobs", List.of(),
            "outcomes rejected as stale or already closed", "sustained rate: handlers outlive their attempts"),
    /** Stale rescue. */
    STALE_RESCUED("riffle.rescue.stale", Type.COUNTER, "attempts", List.of(), "attempts closed by stale rescue",
            "any: a worker died or stopped heartbeating"),
    /** Deadline rescue. */
    DEADLINE_RESCUED("riffle.rescue.deadline", Type.COUNTER, "attempts", List.of(),
            "attempts closed by deadline rescue", "any: handlers overrun their deadline"),
    /** Lease-side rescue. */
    LEASE_RESCUED("riffle.rescue.lease", Type.COUNTER, "attempts", List.of(),
            "attempts closed by lease-side rescue (stale leases, callback timeouts)", ""),
    /** Ring slots truncated. */
    PRUNED_SLOTS("riffle.prune.truncated", Type.COUNTER, "slots", List.of(), "ring slots truncated by prune", ""),
    /** Rotations and prunes by ring and outcome. */
    RING_OPERATIONS("riffle.ring.operations", Type.COUNTER, "operations", List.of("ring", "action", "outcome"),
            "rotations and prunes run by this process; action is rotate or prune, outcome the RotateOutcome or "
                    + "PruneOutcome in lower case", "prune outcome other than pruned/noop for long: a ring is stuck"),
    /** External-wait callbacks registered. */
    CALLBACKS_REGISTERED("riffle.callbacks.registered", Type.COUNTER, "callbacks", List.of(),
            "external-wait callbacks registered", ""),
    /** Callbacks resumed. */
    CALLBACKS_RESUMED("riffle.callbacks.resumed", Type.COUNTER, "callbacks", List.of(),
            "callbacks resolved through this process", ""),
    /** Maintenance leadership. */
    LEADER("riffle.maintenance.leader", Type.GAUGE, "", List.of(), "1 while this process is the maintenance leader",
            "sum over processes 0 for minutes: nobody maintains"),
    /** LISTEN connection. */
    LISTENING("riffle.listener.up", Type.GAUGE, "", List.of(), "1 while the LISTEN connection is up",
            "0 for long: wake-ups fall back to polling"),
    /** LISTEN reconnects. */
    LISTENER_RECONNECTS("riffle.listener.reconnects", Type.COUNTER, "reconnects", List.of(),
            "times the LISTEN connection came back after it was lost", ""),
    /** Ready jobs per queue. */
    QUEUE_AVAILABLE("riffle.queue.available", Type.GAUGE, "jobs", List.of("queue"),
            "ready jobs not yet claimed (cached, refreshed every meterRefreshInterval)", "growing: add workers"),
    /** Running jobs per queue. */
    QUEUE_RUNNING("riffle.queue.running", Type.GAUGE, "jobs", List.of("queue"),
            "open attempts, all processes (cached)", ""),
    /** Deferred jobs per queue. */
    QUEUE_DEFERRED("riffle.queue.deferred", Type.GAUGE, "jobs", List.of("queue"),
            "jobs waiting for a future run_at (cached)", ""),
    /** DLQ depth per queue. */
    QUEUE_DLQ("riffle.queue.dlq", Type.GAUGE, "jobs", List.of("queue"), "jobs in the dead-letter queue (cached)",
            "above 0: look at the DLQ"),
    /** Oldest available job's age per queue. */
    QUEUE_OLDEST_AGE("riffle.queue.oldest_available_age", Type.GAUGE, "seconds", List.of("queue"),
            "age of the oldest ready job by its run_at, database clock (cached)", "above your SLO"),
    /** Dead tuples per table (ring). */
    DEAD_TUPLES("riffle.table.dead_tuples", Type.GAUGE, "tuples", List.of("table"),
            "n_dead_tup from pg_stat_user_tables per table of the schema, partitions summed into their ring "
                    + "(cached; statistics lag)", "steady growth: something updates or deletes in place");

    /** Most distinct values of a {@code queue} or {@code kind} tag per engine: {@value}. */
    public static final int MAX_TAG_VALUES = 100;
    /** The tag value used beyond {@link #MAX_TAG_VALUES}: {@value}. */
    public static final String OTHER_TAG_VALUE = "other";
    /** The tag every meter carries. */
    public static final String SCHEMA_TAG = "schema";

    /** What kind of meter. */
    public enum Type {
        /** Monotonic count. */
        COUNTER,
        /** A value that goes up and down. */
        GAUGE,
        /** Durations (count, sum, max). */
        TIMER,
        /** A distribution of amounts (count, sum, max). */
        SUMMARY
    }

    private final String meterName;
    private final Type type;
    private final String unit;
    private final List<String> tags;
    private final String description;
    private final String alert;

    RiffleMeter(String meterName, Type type, String unit, List<String> tags, String description, String alert) {
        this.meterName = meterName;
        this.type = type;
        this.unit = unit;
        this.tags = tags;
        this.description = description;
        this.alert = alert;
    }

    /** The Micrometer name (dotted; Prometheus shows dots as underscores, adds units and {@code _total}). */
    public String meterName() {
        return meterName;
    }

    /** Counter, gauge, timer or summary. */
    public Type type() {
        return type;
    }

    /** The base unit, empty for a 0/1 gauge. */
    public String unit() {
        return unit;
    }

    /** Tag keys besides {@code schema}, in the order the engine records them. */
    public List<String> tags() {
        return tags;
    }

    /** All tag keys, {@code schema} first. */
    public List<String> allTags() {
        java.util.List<String> all = new java.util.ArrayList<>(tags.size() + 1);
        all.add(SCHEMA_TAG);
        all.addAll(tags);
        return List.copyOf(all);
    }

    /** What it measures. */
    public String description() {
        return description;
    }

    /** What to alert on, or empty. */
    public String alert() {
        return alert;
    }
}
