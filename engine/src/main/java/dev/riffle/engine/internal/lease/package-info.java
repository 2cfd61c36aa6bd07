/**
 * Long attempts ({@code R__70_long_attempts.sql}), the execution plane's mutable half (docs/design/storage-planes.md,
 * docs/design/delivery-contract.md): heartbeat evidence and progress for attempts held longer than one interval
 * ({@code Heartbeater}), on-demand lease materialization for callback registration, parking an attempt on its
 * callback and resolving callbacks from any process ({@code Callbacks}). Lease rescue lives with the other rescues.
 */
@NullMarked
package dev.riffle.engine.internal.lease;

import org.jspecify.annotations.NullMarked;
