/**
 * Riffle's public API: jobs to enqueue, jobs delivered to subscribers, the enqueue client, counts and errors.
 * Nothing here depends on the engine's internal packages.
 */
@NullMarked
package dev.riffle.engine.api;

import org.jspecify.annotations.NullMarked;
