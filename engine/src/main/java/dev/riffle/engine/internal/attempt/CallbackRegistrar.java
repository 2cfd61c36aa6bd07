package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.ExternalCallback;
import java.time.Duration;
import reactor.core.publisher.Mono;

/** Registers external-wait callbacks for held attempts; implemented by the lease mechanism. */
public interface CallbackRegistrar {

    /** Registers a callback for {@code job}, materializing its lease first when it has none. */
    Mono<ExternalCallback> register(ClaimedJob job, Duration timeout);
}
