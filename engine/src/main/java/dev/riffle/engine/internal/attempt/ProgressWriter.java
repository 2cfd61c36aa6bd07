package dev.riffle.engine.internal.attempt;

import java.util.List;
import reactor.core.publisher.Mono;

/** Writes heartbeat evidence and buffered progress for attempts now; implemented by the lease mechanism. */
public interface ProgressWriter {

    /** Records evidence and buffered progress for {@code jobs} in one statement; emits how many were recorded. */
    Mono<Integer> beat(List<ClaimedJob> jobs);
}
