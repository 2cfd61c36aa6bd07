package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.ArgsCodec;
import org.jspecify.annotations.Nullable;

/**
 * The mechanisms a delivered attempt calls back into, built before the claimer and handed to every
 * {@link ClaimedJob} at construction (so no attempt ever exists half-wired): the closer, the progress writer, the
 * callback registrar, the engine-side retry delays and the configured args codec (null for none).
 */
public record AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks,
                              RetryDelays retryDelays, @Nullable ArgsCodec argsCodec) {

    /** Services without engine-side backoff functions or args codec. */
    public AttemptServices(AttemptCloser closer, ProgressWriter progress, CallbackRegistrar callbacks) {
        this(closer, progress, callbacks, RetryDelays.NONE, null);
    }
}
