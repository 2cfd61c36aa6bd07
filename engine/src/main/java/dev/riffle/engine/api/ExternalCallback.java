package dev.riffle.engine.api;

import java.time.Instant;
import java.util.UUID;
import reactor.core.publisher.Mono;

/**
 * A callback registered by a running attempt ({@link Job#registerCallback(java.time.Duration)}): hand {@link #id()}
 * to the external system, then park on {@link #await()}. Any engine instance on the same schema resolves it with
 * {@code Riffle.resumeExternal(id, payload)}; at most one resolution is accepted.
 */
public interface ExternalCallback {

    /** The callback id to give the external system. */
    UUID id();

    /** When the callback times out (database clock). Rescue then routes the attempt to retry or failure. */
    Instant timeoutAt();

    /**
     * Parks the attempt (its lease waits for the callback, so its deadline and stale checks are suspended) and
     * emits the resolution payload (JSON object text) once the callback is resolved. Errors with
     * {@link CallbackTimeoutException} when the callback timed out or the attempt was closed otherwise (cancelled,
     * rescued) before it resolved. Cold; subscribe once.
     */
    Mono<String> await();

    /**
     * Checks a resolution payload at the API edge: a JSON object of at most {@code maxBytes} UTF-8 bytes. What
     * {@code jsonb} cannot store is refused by the database when the callback is resumed, also as
     * {@link InvalidJobException} for {@code payload}.
     *
     * @throws InvalidJobException naming the problem
     */
    static String requirePayload(String payloadJson, int maxBytes) {
        java.util.Objects.requireNonNull(payloadJson, "payloadJson");
        if (payloadJson.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > maxBytes) {
            throw new InvalidJobException("payload", "is larger than " + maxBytes + " bytes");
        }
        JsonObjectCheck.requireObject(payloadJson, "payload");
        return payloadJson;
    }
}
