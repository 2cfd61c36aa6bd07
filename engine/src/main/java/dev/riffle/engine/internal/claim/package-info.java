/**
 * Claiming ({@code R__30_claim.sql}): the demand-driven claim loop behind each subscription ({@code ClaimLoop}),
 * the one-statement claim over the SQL function {@code claim_ready} ({@code Claimer}) and the batched post-commit
 * advance of lane claim cursors ({@code CursorAdvancer}). What a claim hands out, the attempt, lives in
 * {@code internal.attempt}.
 */
@NullMarked
package dev.riffle.engine.internal.claim;

import org.jspecify.annotations.NullMarked;
