package dev.riffle.engine.api;

/** The engine was closed; the operation was not started. */
public final class RiffleShutdownException extends RiffleException {
    private static final long serialVersionUID = 1L;

    /** Creates the error. */
    public RiffleShutdownException(String message) {
        super(message);
    }
}
