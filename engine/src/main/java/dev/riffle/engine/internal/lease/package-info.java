/**
 * The execution plane's mutable half (docs/design/storage-planes.md, docs/design/delivery-contract.md): on-demand lease
 * materialization for callback registration, parking an attempt on its callback, and resolving callbacks from any
 * process. Claim-time materialization happens inside the claim function; lease rescue lives with the other rescues.
 */
@NullMarked
package dev.riffle.engine.internal.lease;

import org.jspecify.annotations.NullMarked;
