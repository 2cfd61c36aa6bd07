package dev.riffle.engine.api;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * A stored schedule as {@code RiffleAdmin.schedules()} reads it.
 *
 * @param schedule the definition
 * @param paused whether it is paused (fires while paused are skipped, not caught up)
 * @param lastFireAt the latest fire time enqueued; null before the first fire
 * @param nextFireAt the next fire time to enqueue, by the engine's clock: the first fire after the last one (or
 *                   after registration, a change or a resume); in the past when it is due and the leader has not
 *                   evaluated it yet. Null while paused, or when the expression never fires again
 */
public record CronScheduleStatus(CronSchedule schedule, boolean paused, @Nullable Instant lastFireAt,
                                 @Nullable Instant nextFireAt) {}
