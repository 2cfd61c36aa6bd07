/**
 * Rescue of attempts whose worker is gone or whose deadline passed: the stale, deadline and lease sweeps over the
 * per-claim-slot cursors; the sweeps run in the database and close through {@code close_attempts} under each
 * attempt's lock. Rescued workers are told to stop through the cancel channel.
 */
@NullMarked
package dev.riffle.engine.internal.rescue;

import org.jspecify.annotations.NullMarked;
