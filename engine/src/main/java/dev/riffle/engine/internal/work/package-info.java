/**
 * Running handlers for {@code Riffle.work(...)} ({@code HandlerRunner}): dispatch by kind, one recorded outcome per
 * attempt, cancellation honoured, and a failing outcome write logged once per outage. No SQL of its own: outcomes go
 * through the attempt's closer ({@code internal.close}).
 */
@NullMarked
package dev.riffle.engine.internal.work;

import org.jspecify.annotations.NullMarked;
