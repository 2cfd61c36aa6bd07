package dev.riffle.engine.internal.metrics;

import java.util.List;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the engine counters to Micrometer when a registry is configured. Micrometer is an optional
 * dependency: the Micrometer types live only in {@link MicrometerBinding}, which is loaded only when a registry
 * was given, so the engine runs without Micrometer on the classpath.
 */
public interface RiffleMetrics extends AutoCloseable {

    /** Meter names, documented once (see docs/operations.md). */
    String CLAIM_BATCHES = "riffle.claim.batches";
    /** Jobs claimed. */
    String CLAIMED_JOBS = "riffle.claim.jobs";
    /** Claims that found nothing. */
    String EMPTY_CLAIMS = "riffle.claim.empty";
    /** Completion flushes. */
    String COMPLETION_BATCHES = "riffle.complete.batches";
    /** Completions accepted. */
    String COMPLETED = "riffle.complete.accepted";
    /** Completions rejected (stale or already closed). */
    String REJECTED = "riffle.complete.rejected";
    /** Attempts closed by stale rescue. */
    String STALE_RESCUED = "riffle.rescue.stale";
    /** Counter: attempts closed by lease-side rescue (stale leases, callback timeouts). */
    String LEASE_RESCUED = "riffle.rescue.lease";
    /** Counter: external-wait callbacks registered. */
    String CALLBACKS_REGISTERED = "riffle.callbacks.registered";
    /** Counter: callbacks resolved through this process. */
    String CALLBACKS_RESUMED = "riffle.callbacks.resumed";
    /** Attempts closed by deadline rescue. */
    String DEADLINE_RESCUED = "riffle.rescue.deadline";
    /** Ring slots truncated by prune. */
    String PRUNED_SLOTS = "riffle.prune.truncated";
    /** 1 while this process is the maintenance leader. */
    String LEADER = "riffle.maintenance.leader";
    /** Attempts delivered and not finished. */
    String IN_FLIGHT = "riffle.jobs.in_flight";
    /** 1 while LISTEN is up. */
    String LISTENING = "riffle.listener.up";
    /** Claim statements in flight. */
    String CLAIMS_RUNNING = "riffle.claims.running";

    @Override
    void close();

    /**
     * One meter over a snapshot type {@code S}: a monotonic counter, or a gauge that goes up and down. The engine
     * names its meters over its own stats record, so this package needs no engine type.
     */
    record Meter<S>(String name, String description, boolean gauge, ToDoubleFunction<S> value) {
        /** A counter. */
        public static <S> Meter<S> counter(String name, String description, ToDoubleFunction<S> value) {
            return new Meter<>(name, description, false, value);
        }

        /** A gauge. */
        public static <S> Meter<S> gauge(String name, String description, ToDoubleFunction<S> value) {
            return new Meter<>(name, description, true, value);
        }
    }

    /**
     * Binds {@code meters}, each read from a fresh {@code stats} snapshot, to {@code registry} (a Micrometer
     * {@code MeterRegistry}) tagged with the schema, or returns a no-op when the registry is null.
     */
    static <S> RiffleMetrics bind(@Nullable Object registry, String schema, Supplier<S> stats, List<Meter<S>> meters) {
        if (registry == null) {
            return () -> {};
        }
        return MicrometerBinding.bind(registry, schema, stats, meters);
    }
}
