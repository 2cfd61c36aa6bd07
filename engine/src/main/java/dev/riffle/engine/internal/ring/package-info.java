/**
 * Ring maintenance ({@code R__60_ring.sql}): rotation of the queue, claim and lease rings and the prune that
 * proves a slot inert before and after its bounded {@code ACCESS EXCLUSIVE} locks and truncates it
 * ({@code RingMaintainer}; docs/design/rings-and-proofs.md).
 */
@NullMarked
package dev.riffle.engine.internal.ring;

import org.jspecify.annotations.NullMarked;
