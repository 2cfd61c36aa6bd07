/**
 * Micrometer Observation around enqueue, claim, handler and completion flush, and the trace context carried with
 * the job from enqueue to handler (docs/tracing.md). Bound only when the application supplies an
 * {@code ObservationRegistry}: Micrometer stays optional, and with none the engine pays one {@code enabled()} check.
 */
@NullMarked
package dev.riffle.engine.internal.tracing;

import org.jspecify.annotations.NullMarked;
