/**
 * The leader-elected maintenance loops: leadership by advisory lock ({@code Leadership}), the scheduled loop that
 * runs each step on its own cadence and backs off on failure ({@code MaintenanceLoop}), promotion of due deferred
 * jobs ({@code Promoter}), ring rotation and prune ({@code RingMaintainer}) and DLQ retention ({@code DlqRetention}).
 */
@NullMarked
package dev.riffle.engine.internal.maintenance;

import org.jspecify.annotations.NullMarked;
