package dev.riffle.engine;

import static dev.riffle.engine.internal.metrics.RiffleMetrics.Meter.counter;
import static dev.riffle.engine.internal.metrics.RiffleMetrics.Meter.gauge;

import dev.riffle.engine.internal.metrics.RiffleMetrics;
import java.util.List;

/** The engine's meters over {@link RiffleStats} (names in {@link RiffleMetrics}, listed in docs/operations.md). */
final class EngineMeters {
    private EngineMeters() {}

    static final List<RiffleMetrics.Meter<RiffleStats>> ALL = List.of(
            counter(RiffleMetrics.CLAIM_BATCHES, "claim statements that claimed jobs", RiffleStats::claimBatches),
            counter(RiffleMetrics.CLAIMED_JOBS, "jobs claimed", RiffleStats::claimedJobs),
            counter(RiffleMetrics.EMPTY_CLAIMS, "claim statements that found no job", RiffleStats::emptyClaims),
            counter(RiffleMetrics.COMPLETION_BATCHES, "completion flushes (one statement and commit each)",
                    RiffleStats::completionBatches),
            counter(RiffleMetrics.COMPLETED, "completions accepted", RiffleStats::completed),
            counter(RiffleMetrics.REJECTED, "completions rejected as stale or already closed", RiffleStats::rejected),
            counter(RiffleMetrics.STALE_RESCUED, "attempts closed by stale rescue", RiffleStats::staleRescued),
            counter(RiffleMetrics.DEADLINE_RESCUED, "attempts closed by deadline rescue", RiffleStats::deadlineRescued),
            counter(RiffleMetrics.PRUNED_SLOTS, "ring slots truncated by prune", RiffleStats::prunedSlots),
            counter(RiffleMetrics.LEASE_RESCUED, "attempts closed by lease-side rescue", RiffleStats::leaseRescued),
            counter(RiffleMetrics.CALLBACKS_REGISTERED, "external-wait callbacks registered",
                    RiffleStats::callbacksRegistered),
            counter(RiffleMetrics.CALLBACKS_RESUMED, "callbacks resolved through this process",
                    RiffleStats::callbacksResumed),
            gauge(RiffleMetrics.LEADER, "1 while this process is the maintenance leader", s -> s.leader() ? 1 : 0),
            gauge(RiffleMetrics.IN_FLIGHT, "attempts delivered by this process and not finished", RiffleStats::inFlight),
            gauge(RiffleMetrics.LISTENING, "1 while the LISTEN connection is up", s -> s.listening() ? 1 : 0),
            gauge(RiffleMetrics.CLAIMS_RUNNING, "claim statements of this process in flight",
                    RiffleStats::claimsRunning));
}
