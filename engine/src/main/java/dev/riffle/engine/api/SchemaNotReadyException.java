package dev.riffle.engine.api;

/** The configured schema is missing or not migrated, and the engine was told not to migrate it. */
public final class SchemaNotReadyException extends RiffleException {
    private static final long serialVersionUID = 1L;

    /** Creates the error. */
    public SchemaNotReadyException(String message) {
        super(message);
    }
}
