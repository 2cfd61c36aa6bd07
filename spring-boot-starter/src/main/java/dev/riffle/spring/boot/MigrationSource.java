package dev.riffle.spring.boot;

import dev.riffle.engine.DatabaseUrl;
import org.jspecify.annotations.Nullable;

/**
 * Where Riffle's Flyway may connect when nothing more specific is set: the starter's bean over Boot's
 * {@code R2dbcConnectionDetails} (spring.r2dbc.*, or a service connection) when spring-boot-r2dbc is present.
 */
@FunctionalInterface
interface MigrationSource {

    /** The coordinates, or null when this source has none. */
    @Nullable DatabaseUrl migrationUrl();
}
