package dev.riffle.engine;

/**
 * In-process counters since the engine started.
 *
 * @param claimBatches claim statements that claimed jobs; each wrote exactly one compact claim batch row
 * @param claimedJobs jobs claimed
 * @param emptyClaims claim statements that found nothing (or only busy lanes)
 * @param completionBatches completion flushes; each is one statement and one commit
 * @param completed completions accepted
 * @param closed non-success outcomes accepted (retry, snooze, fail, cancel)
 * @param rejected outcomes rejected as already closed or stale
 * @param inFlight attempts delivered by this process and not finished yet
 * @param listening whether the LISTEN connection is up
 * @param leader whether this process is the maintenance leader
 * @param staleRescued attempts closed by stale rescue run in this process
 * @param deadlineRescued attempts closed by deadline rescue run in this process
 * @param prunedSlots ring slots truncated by prunes run in this process
 * @param leaseRescued attempts closed by lease-side rescue (stale leases, callback timeouts) run in this process
 * @param callbacksRegistered external-wait callbacks registered by this process's handlers
 * @param callbacksResumed callbacks resolved through this process ({@code resumeExternal})
 * @param lockDetours claims that read the queue ring child by child because a prune held a child locked
 * @param claimsRunning claim statements of this process in flight right now
 * @param peakClaimsRunning the most claim statements this process had in flight at once since it started
 */
public record RiffleStats(long claimBatches, long claimedJobs, long emptyClaims, long completionBatches,
                          long completed, long closed, long rejected, int inFlight, boolean listening,
                          boolean leader, long staleRescued, long deadlineRescued, long prunedSlots,
                          long leaseRescued, long callbacksRegistered, long callbacksResumed, long lockDetours,
                          int claimsRunning, int peakClaimsRunning) {}
