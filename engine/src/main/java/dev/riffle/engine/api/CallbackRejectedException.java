package dev.riffle.engine.api;

import java.util.UUID;

/** {@code resumeExternal} was refused; nothing was written. */
public final class CallbackRejectedException extends RiffleException {
    private static final long serialVersionUID = 1L;

    /** Why the resolution was refused. */
    public enum Reason {
        /** The callback was already resolved; only the first resolution counts. */
        ALREADY_RESOLVED,
        /** No pending callback has this id: never registered, timed out, or its attempt has ended. */
        NOT_FOUND
    }

    private final UUID callbackId;
    private final Reason reason;

    /** Creates the error. */
    public CallbackRejectedException(UUID callbackId, Reason reason) {
        super("callback " + callbackId + " not resumed: "
                + (reason == Reason.ALREADY_RESOLVED ? "it was already resolved" : "no pending callback has this id"));
        this.callbackId = callbackId;
        this.reason = reason;
    }

    /** The callback. */
    public UUID callbackId() {
        return callbackId;
    }

    /** Why it was refused. */
    public Reason reason() {
        return reason;
    }
}
