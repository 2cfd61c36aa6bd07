/**
 * Claiming: the demand-driven claim loop behind each subscription ({@code ClaimLoop}), the one-statement claim
 * over the SQL function {@code claim_ready} ({@code Claimer}), the receipt a claimed job carries ({@code ClaimedJob}),
 * the registry of attempts this process holds ({@code InFlight}), the heartbeat that keeps long attempts fresh
 * ({@code Heartbeater}) and the batched advance of lane claim cursors ({@code CursorAdvancer}).
 */
@NullMarked
package dev.riffle.engine.internal.claim;

import org.jspecify.annotations.NullMarked;
