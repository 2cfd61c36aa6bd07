/**
 * Enqueueing: validation at the edge and the one-statement batch insert over
 * {@code enqueue_jobs}, in the engine's pool or in the caller's own transaction.
 */
@NullMarked
package dev.riffle.engine.internal.enqueue;

import org.jspecify.annotations.NullMarked;
