/**
 * Riffle engine entry points: {@link dev.riffle.engine.Riffle}, its configuration and counters.
 */
@NullMarked
package dev.riffle.engine;

import org.jspecify.annotations.NullMarked;
