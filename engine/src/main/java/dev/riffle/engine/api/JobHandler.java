package dev.riffle.engine.api;

import reactor.core.publisher.Mono;

/**
 * Runs jobs of one kind. The returned {@code Mono} decides the outcome; an error signal (or an exception thrown
 * by {@code handle}) is a {@link JobOutcome.Retry} with the queue's backoff while attempts remain, then a terminal
 * failure. An empty {@code Mono} means {@link JobOutcome.Complete}. Handlers run on the driver's event-loop
 * threads and must not block; move blocking work to {@code Schedulers.boundedElastic()}.
 */
@FunctionalInterface
public interface JobHandler {

    /** Handles one attempt. */
    Mono<JobOutcome> handle(Job job);
}
