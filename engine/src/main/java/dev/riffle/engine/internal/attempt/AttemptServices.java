package dev.riffle.engine.internal.attempt;

/**
 * The mechanisms a delivered attempt calls back into, built before the claimer and handed to every
 * {@link ClaimedJob} at construction (so no attempt ever exists half-wired).
 */
public record AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks) {}
