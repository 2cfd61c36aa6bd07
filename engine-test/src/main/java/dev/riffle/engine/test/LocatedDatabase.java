package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import java.util.Objects;

/**
 * A PostgreSQL server found (or started) by {@link DatabaseLocator}, with where it came from.
 *
 * @param url how to reach it; the database is one the located user may create schemas in
 * @param source which lookup step produced it
 * @param description one line for logs and failure messages, e.g. {@code "local server 127.0.0.1:5432 (user postgres,
 *     database test)"}
 */
public record LocatedDatabase(DatabaseUrl url, Source source, String description) {

    /** Checks that no component is null. */
    public LocatedDatabase {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(description, "description");
    }

    /** The lookup step that produced a {@link LocatedDatabase}, in the order the locator tries them. */
    public enum Source {
        /**
         * An explicit URL: the {@value DatabaseLocator#URL_PROPERTY} system property or the
         * {@value DatabaseLocator#URL_ENV} environment variable.
         */
        ENVIRONMENT,
        /** A server already listening on 127.0.0.1:5432. */
        LOCAL_SERVER,
        /** A container started through Testcontainers. */
        TESTCONTAINERS,
        /** An {@link EmbeddedPostgresServer} started in this JVM. */
        EMBEDDED
    }
}
