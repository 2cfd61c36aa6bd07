/**
 * Cron schedules (docs/cron.md): the stored schedules and the leader's fire pass ({@code CronSchedules}). The engine
 * computes which fire times are due with cron-utils (through {@link dev.riffle.engine.api.CronSchedule}); the
 * database enqueues them and moves the schedule's last fire in one transaction ({@code cron_fire},
 * {@code R__84_cron.sql}), a compare-and-set that makes each fire enqueue exactly once across engines and leader
 * failovers.
 */
@NullMarked
package dev.riffle.engine.internal.cron;

import org.jspecify.annotations.NullMarked;
