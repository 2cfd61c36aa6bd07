/**
 * The claimed attempt as this process holds it: the delivered job and its receipt address ({@code ClaimedJob},
 * {@code Receipt}), the registry of attempts held here ({@code InFlight}) and the narrow interfaces through which an
 * attempt reaches the mechanisms that close it, write its progress and park it on a callback
 * ({@code AttemptCloser}, {@code ProgressWriter}, {@code CallbackRegistrar}). Nothing here talks to the database;
 * this package depends on no other machinery package, which is what keeps claim, close and lease free of cycles.
 */
@NullMarked
package dev.riffle.engine.internal.attempt;

import org.jspecify.annotations.NullMarked;
