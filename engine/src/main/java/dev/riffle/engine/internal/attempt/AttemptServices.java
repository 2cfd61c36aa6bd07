package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.ArgsCodec;
import org.jspecify.annotations.Nullable;

/**
 * The mechanisms a delivered attempt calls back into, built before the claimer and handed to every
 * {@link ClaimedJob} at construction (so no attempt ever exists half-wired): the closer, the progress writer, the
 * callback registrar, the engine-side retry delays, the configured args codec (null for none),
 * the meter recorder and the observations (the handler's, {@code Job.observed}).
 */
public record AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks,
                              RetryDelays retryDelays, @Nullable ArgsCodec argsCodec,
                              dev.riffle.engine.internal.metrics.Recorder meters,
                              dev.riffle.engine.internal.tracing.JobTracing tracing) {

    /** Services that observe nothing. */
    public AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks,
                           RetryDelays retryDelays, @Nullable ArgsCodec argsCodec,
                           dev.riffle.engine.internal.metrics.Recorder meters) {
        this(closer, progress, callbacks, retryDelays, argsCodec, meters,
                dev.riffle.engine.internal.tracing.JobTracing.NONE);
    }

    /** Services that record no meters. */
    public AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks,
                           RetryDelays retryDelays, @Nullable ArgsCodec argsCodec) {
        this(closer, progress, callbacks, retryDelays, argsCodec, dev.riffle.engine.internal.metrics.Recorder.NONE);
    }

    /** Services without engine-side backoff functions or args codec. */
    public AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks) {
        this(closer, progress, callbacks, RetryDelays.NONE, null);
    }
}
