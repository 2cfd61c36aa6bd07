package dev.riffle.engine.api;

import java.time.Instant;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Observable state of one ring.
 *
 * @param ring the ring
 * @param currentSlot the open slot
 * @param generation the current generation
 * @param slotCount slots in the ring
 * @param sealedSlots initialized slots other than the current one, oldest first
 * @param lastRotate last rotation outcome seen by this process, or null
 * @param lastPrune last prune outcome seen by this process, or null
 * @param lastPruneAt when that prune ran, or null
 * @param pruned prunes that truncated a slot, since start
 * @param pruneBackoffLevel current prune back-off level (0 = none; skip 2^level ticks)
 */
public record RingStatus(Ring ring, int currentSlot, long generation, int slotCount, List<Integer> sealedSlots,
                         @Nullable RotateOutcome lastRotate, @Nullable PruneOutcome lastPrune,
                         @Nullable Instant lastPruneAt, long pruned, int pruneBackoffLevel) {}
