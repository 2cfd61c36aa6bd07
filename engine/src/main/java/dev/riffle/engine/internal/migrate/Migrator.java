package dev.riffle.engine.internal.migrate;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Runs the migrations at start when they are on the classpath; otherwise fails naming the dependency. This class
 * names no type of the migrations module, Flyway or JDBC, so loading it loads none of them.
 */
public final class Migrator {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine");

    /** The class of the optional migrations module the engine calls. */
    static final String MIGRATIONS_CLASS = "dev.riffle.migrations.RiffleMigrations";
    /** Flyway's entry class, which the migrations module brings. */
    static final String FLYWAY_CLASS = "org.flywaydb.core.Flyway";
    /** pgJDBC's driver, which the migrations module brings. */
    static final String JDBC_DRIVER_CLASS = "org.postgresql.Driver";

    /** The message when migrations are asked for and the module is missing. */
    public static final String MISSING_MODULE = "migrate(true) needs the dev.riffle:riffle-migrations dependency "
            + "(it brings Flyway and the PostgreSQL JDBC driver) on the classpath; add it, or set migrate(false) and "
            + "migrate the schema yourself (docs/migrations.md)";

    private Migrator() {}

    /**
     * Migrates {@code schema} over JDBC at {@code jdbcUrl} on {@code boundedElastic} (Flyway blocks), logging what
     * it applied. Cold. Errors with {@link IllegalStateException} ({@link #MISSING_MODULE}) when the migrations
     * module, Flyway or pgJDBC is not on the classpath.
     */
    public static Mono<Void> migrate(String jdbcUrl, String user, String password, String schema) {
        return Mono.defer(() -> {
            String missing = missing(Migrator.class.getClassLoader());
            if (missing != null) {
                return Mono.error(new IllegalStateException(MISSING_MODULE + " (class " + missing + " not found)"));
            }
            return Mono.fromCallable(() -> FlywayRun.migrate(jdbcUrl, user, password, schema))
                    .subscribeOn(Schedulers.boundedElastic())
                    .doOnNext(line -> log.info("{}", line))
                    .then();
        });
    }

    /** The first of the needed classes {@code loader} cannot find, or null when all are there (none initialized). */
    static @Nullable String missing(ClassLoader loader) {
        for (String name : new String[] {MIGRATIONS_CLASS, FLYWAY_CLASS, JDBC_DRIVER_CLASS}) {
            try {
                Class.forName(name, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                return name;
            }
        }
        return null;
    }
}
