package dev.riffle.engine.api;

/** Result of one rotation attempt on a ring (docs/design/rings-and-proofs.md). */
public enum RotateOutcome {
    /** The cursor moved to the next slot. */
    ROTATED,
    /**
     * The current slot is not due to be left yet: younger than the rotation's maximum age and holding no more rows than
     * its maximum, or younger than its minimum interval (only the maintenance loop's rotation is paced; see
     * {@code MaintenanceConfig}).
     */
    SKIPPED_NOT_DUE,
    /** The next slot still holds rows or pages (not pruned yet), or another rotator holds the ring lock. */
    SKIPPED_BUSY,
    /** The whole ring is empty; rotating would only write ledger rows. */
    SKIPPED_IDLE;

    /** Parses the database's answer. */
    public static RotateOutcome parse(String s) {
        return switch (s) {
            case "rotated" -> ROTATED;
            case "skipped_not_due" -> SKIPPED_NOT_DUE;
            case "skipped_busy" -> SKIPPED_BUSY;
            case "skipped_idle" -> SKIPPED_IDLE;
            default -> throw new IllegalStateException("unknown rotate outcome " + s);
        };
    }
}
