package dev.riffle.engine.api;

import java.time.Instant;

/**
 * One fire of a schedule that was enqueued.
 *
 * @param schedule the schedule's name
 * @param fireAt the fire time (whole seconds)
 * @param jobId the job enqueued for it
 */
public record CronFire(String schedule, Instant fireAt, long jobId) {}
