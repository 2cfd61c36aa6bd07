package dev.riffle.engine.api;

/**
 * What an enqueue did: the job's id, and whether the job was a duplicate of a unique job already holding its key
 * ({@link UniqueOptions}), in which case {@code jobId} is that existing job's id and nothing was written.
 *
 * @param jobId the new job's id, or the existing job's id for a duplicate
 * @param duplicate true when no job was created because a job with the same unique key holds it
 */
public record EnqueueResult(long jobId, boolean duplicate) {}
