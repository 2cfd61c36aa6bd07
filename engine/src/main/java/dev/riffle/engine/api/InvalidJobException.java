package dev.riffle.engine.api;

/**
 * A job was rejected at the API edge before anything was written. {@link #field()} names the offending input
 * and the message states the limit it broke.
 */
public final class InvalidJobException extends RiffleException {
    private static final long serialVersionUID = 1L;
    private final String field;

    /** Creates the error for {@code field}. */
    public InvalidJobException(String field, String message) {
        super(field + ": " + message);
        this.field = field;
    }

    /** Creates the error for {@code field} with the database's cause. */
    public InvalidJobException(String field, String message, Throwable cause) {
        super(field + ": " + message, cause);
        this.field = field;
    }

    /** The input field that was invalid, e.g. {@code queue}, {@code args}, {@code priority}. */
    public String field() {
        return field;
    }
}
