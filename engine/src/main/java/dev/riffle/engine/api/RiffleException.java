package dev.riffle.engine.api;

/** Root of every error Riffle raises on purpose. Unchecked; subtypes say what went wrong. */
public class RiffleException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message. */
    public RiffleException(String message) {
        super(message);
    }

    /** Creates an exception with a message and a cause. */
    public RiffleException(String message, Throwable cause) {
        super(message, cause);
    }
}
