package dev.riffle.engine.api;

import java.util.UUID;

/**
 * A parked attempt will not be resumed: its callback timed out (rescue routed the job to retry or failure) or its
 * attempt was closed otherwise (an operator's cancel, another rescue). The handler should stop; any outcome it
 * still sends is rejected.
 */
public final class CallbackTimeoutException extends RiffleException {
    private static final long serialVersionUID = 1L;

    private final UUID callbackId;

    /** Creates the error. */
    public CallbackTimeoutException(UUID callbackId, String why) {
        super("callback " + callbackId + " will not be resolved: " + why);
        this.callbackId = callbackId;
    }

    /** The callback. */
    public UUID callbackId() {
        return callbackId;
    }
}
