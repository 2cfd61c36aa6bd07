/**
 * Micrometer meters for operators: the engine counters, bound only when the
 * application supplies a registry (Micrometer stays optional).
 */
@NullMarked
package dev.riffle.engine.internal.metrics;

import org.jspecify.annotations.NullMarked;
