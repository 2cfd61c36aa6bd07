package dev.riffle.engine.api;

import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What the proof doctor found on a live schema ({@code RiffleAdmin.doctor()}, docs/operations.md#proof-doctor): the
 * storage invariants that do not hold, the open attempts of the receipt plane by name, and, per ring, what blocks its
 * next prune and why. The checks are read-only and bounded; the named attempts and rows are capped per slot
 * ({@link #NAMED_PER_SLOT}).
 *
 * @param ok true when no invariant is violated (open attempts and prune blockers are not violations: a running job
 *           holds an attempt open, and an unclaimed job holds its queue slot)
 * @param violations the invariants that do not hold, in the order the doctor checks them
 * @param rings one entry per ring: the slot its next prune targets and what, if anything, blocks it
 * @param openAttempts open attempts (claims without closure evidence) per claim slot, at most
 *                     {@link #NAMED_PER_SLOT} per slot
 */
public record DoctorReport(boolean ok, List<Violation> violations, List<RingPrune> rings, List<Attempt> openAttempts) {

    /** How many open attempts, or rows blocking a prune, the doctor names per slot at most: {@value}. */
    public static final int NAMED_PER_SLOT = 20;

    /** Check: a claim slot's claims minus its closures differ from its open attempts (a double or orphan closure). */
    public static final String CLAIM_BALANCE = "claim_balance";
    /** Check: a closure closes a receipt no claim of its slot holds, or an explicit closure has no row-local claim. */
    public static final String ORPHAN_CLOSURE = "orphan_closure";
    /** Check: a receipt is closed more than once. */
    public static final String DOUBLE_CLOSURE = "double_closure";
    /** Check: a ring slot holds rows of a generation other than its current one, or the ring has not entered it. */
    public static final String GENERATION = "generation";
    /** Check: a ring's rotation ledger or slot table is inconsistent with its slot count. */
    public static final String RING_CURSOR = "ring_cursor";
    /** Check: a claim slot's rescue cursor is in the future or names no claim of the slot. */
    public static final String RESCUE_CURSOR = "rescue_cursor";
    /** Check: a lane lacks one of its heads, or its claim cursor is past its enqueue head. */
    public static final String LANE_CURSOR = "lane_cursor";
    /** Check: a child of an append-only ring family was updated or deleted from. */
    public static final String APPEND_ONLY = "append_only";

    /** Validates and freezes. */
    public DoctorReport {
        violations = List.copyOf(violations);
        rings = List.copyOf(rings);
        openAttempts = List.copyOf(openAttempts);
        if (ok != violations.isEmpty()) {
            throw new IllegalArgumentException("ok must be true exactly when there are no violations");
        }
    }

    /** The prune entry of {@code ring}. */
    public RingPrune ring(Ring ring) {
        Objects.requireNonNull(ring, "ring");
        return rings.stream().filter(r -> r.ring() == ring).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no entry for ring " + ring));
    }

    /** The violations of one check (one of the constants of this class). */
    public List<Violation> violations(String check) {
        Objects.requireNonNull(check, "check");
        return violations.stream().filter(v -> v.check().equals(check)).toList();
    }

    /**
     * A storage invariant that does not hold.
     *
     * @param check which check found it (one of the constants of {@link DoctorReport})
     * @param ring the ring it concerns, or null (lanes, append-only statistics)
     * @param slot the ring slot it concerns, or null
     * @param detail what was found, for an operator
     */
    public record Violation(String check, @Nullable Ring ring, @Nullable Integer slot, String detail) {
        /** Validates. */
        public Violation {
            Objects.requireNonNull(check, "check");
            Objects.requireNonNull(detail, "detail");
        }
    }

    /**
     * An attempt or row the doctor names: an open attempt of a claim slot, or something that blocks a prune.
     *
     * @param ring the ring of the slot it was found in
     * @param slot the slot
     * @param jobId the job
     * @param runLease the attempt's run lease (for a pending ready row: its previous attempt's, 0 for a new job)
     * @param note what it is (for an open attempt, how many the slot has in all; for a blocker, "open attempt",
     *             "lease" or the ready row's lane and position)
     */
    public record Attempt(Ring ring, int slot, long jobId, long runLease, String note) {
        /** Validates. */
        public Attempt {
            Objects.requireNonNull(ring, "ring");
            Objects.requireNonNull(note, "note");
        }
    }

    /**
     * What the next prune of a ring would do with the slot it targets (the slot rotation needs next: on a wrapped
     * ring, the oldest sealed one).
     *
     * @param ring the ring
     * @param slot the slot the next prune targets
     * @param state {@code empty} (nothing to truncate), {@code prunable} (the proofs pass and nothing holds it), or
     *              what blocks it: a prune outcome word ({@code open_claims}, {@code pending_ready},
     *              {@code unclosed_claims}, {@code active_leases}, {@code lease_active}, {@code retention}) or
     *              {@code lock_held} (a transaction open for a second or more holds a lock on the slot's tables,
     *              so prune would answer {@link PruneOutcome#BLOCKED})
     * @param detail why, for an operator
     * @param blockedBy the attempts, ready rows or leases the blocker consists of, at most
     *                  {@link DoctorReport#NAMED_PER_SLOT}
     */
    public record RingPrune(Ring ring, int slot, String state, String detail, List<Attempt> blockedBy) {
        /** Validates and freezes. */
        public RingPrune {
            Objects.requireNonNull(ring, "ring");
            Objects.requireNonNull(state, "state");
            Objects.requireNonNull(detail, "detail");
            blockedBy = List.copyOf(blockedBy);
        }

        /** True when something keeps the next prune from truncating the slot. */
        public boolean blocked() {
            return !state.equals("empty") && !state.equals("prunable");
        }
    }
}
