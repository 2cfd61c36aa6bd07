/**
 * Closing attempts ({@code R__40_close.sql}): the batcher that turns many handlers' {@code complete()},
 * {@code retry()}, ... into one {@code complete_compact} or {@code close_attempts} statement per flush, retries a
 * flush through an outage and maps the database's per-item {@link dev.riffle.engine.internal.close.CloseStatus}
 * to success or {@code AttemptRejectedException} (ADR 0006).
 */
@NullMarked
package dev.riffle.engine.internal.close;

import org.jspecify.annotations.NullMarked;
