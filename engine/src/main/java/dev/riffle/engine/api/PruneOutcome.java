package dev.riffle.engine.api;

/** Result of one prune attempt on a ring (docs/design/rings-and-proofs.md). */
public enum PruneOutcome {
    /** The slot was proven inert and truncated. */
    PRUNED,
    /** Nothing to prune: the next slot is already empty. */
    NOOP,
    /** The ACCESS EXCLUSIVE lock could not be had within the lock timeout (a reader holds the slot), or another
     * leader holds the ring lock; nothing was touched and prune backs off. */
    BLOCKED,
    /** Claims in the slot lack closure evidence; rescue must close them first. */
    SKIPPED_OPEN_CLAIMS,
    /** A ready row in the slot is still claimable. */
    SKIPPED_PENDING_READY,
    /** A claim referencing the queue slot is still open. */
    SKIPPED_UNCLOSED_CLAIMS,
    /** A materialized lease references the slot. */
    SKIPPED_ACTIVE_LEASES,
    /** The lease slot still holds a live lease. */
    SKIPPED_LEASE_ACTIVE,
    /**
     * The queue slot is inert, but holds terminal history younger than the history retention floor
     * ({@code MaintenanceConfig.historyRetention}); the ring waits until it ages out.
     */
    SKIPPED_RETENTION,
    /** The slot became current while prune waited for its lock. */
    SKIPPED_CURRENT;

    /** Parses the database's answer. */
    public static PruneOutcome parse(String s) {
        return switch (s) {
            case "pruned" -> PRUNED;
            case "noop" -> NOOP;
            case "blocked" -> BLOCKED;
            case "skipped_open_claims" -> SKIPPED_OPEN_CLAIMS;
            case "skipped_pending_ready" -> SKIPPED_PENDING_READY;
            case "skipped_unclosed_claims" -> SKIPPED_UNCLOSED_CLAIMS;
            case "skipped_active_leases" -> SKIPPED_ACTIVE_LEASES;
            case "skipped_lease_active" -> SKIPPED_LEASE_ACTIVE;
            case "skipped_retention" -> SKIPPED_RETENTION;
            case "skipped_current" -> SKIPPED_CURRENT;
            default -> throw new IllegalStateException("unknown prune outcome " + s);
        };
    }
}
