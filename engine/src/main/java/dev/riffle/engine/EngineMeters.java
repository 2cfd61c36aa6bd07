package dev.riffle.engine;

import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.internal.metrics.RiffleMetrics.Meter;
import java.util.List;

/** The engine's meters read from {@link RiffleStats} (the others are recorded as events; all named in {@link RiffleMeter}). */
final class EngineMeters {
    private EngineMeters() {}

    static final List<Meter<RiffleStats>> ALL = List.of(
            new Meter<>(RiffleMeter.CLAIM_BATCHES, RiffleStats::claimBatches),
            new Meter<>(RiffleMeter.CLAIMED_JOBS, RiffleStats::claimedJobs),
            new Meter<>(RiffleMeter.EMPTY_CLAIMS, RiffleStats::emptyClaims),
            new Meter<>(RiffleMeter.CLAIM_LOCK_DETOURS, RiffleStats::lockDetours),
            new Meter<>(RiffleMeter.COMPLETION_BATCHES, RiffleStats::completionBatches),
            new Meter<>(RiffleMeter.COMPLETED, RiffleStats::completed),
            new Meter<>(RiffleMeter.CLOSED, RiffleStats::closed),
            new Meter<>(RiffleMeter.REJECTED, RiffleStats::rejected),
            new Meter<>(RiffleMeter.STALE_RESCUED, RiffleStats::staleRescued),
            new Meter<>(RiffleMeter.DEADLINE_RESCUED, RiffleStats::deadlineRescued),
            new Meter<>(RiffleMeter.PRUNED_SLOTS, RiffleStats::prunedSlots),
            new Meter<>(RiffleMeter.LEASE_RESCUED, RiffleStats::leaseRescued),
            new Meter<>(RiffleMeter.CALLBACKS_REGISTERED, RiffleStats::callbacksRegistered),
            new Meter<>(RiffleMeter.CALLBACKS_RESUMED, RiffleStats::callbacksResumed),
            new Meter<>(RiffleMeter.LEADER, s -> s.leader() ? 1 : 0),
            new Meter<>(RiffleMeter.IN_FLIGHT, RiffleStats::inFlight),
            new Meter<>(RiffleMeter.LISTENING, s -> s.listening() ? 1 : 0),
            new Meter<>(RiffleMeter.CLAIMS_RUNNING, RiffleStats::claimsRunning));
}
