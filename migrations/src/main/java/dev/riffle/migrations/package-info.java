/**
 * Installs and upgrades a Riffle schema with Flyway: the schema name is validated once and only used quoted, and the
 * ring slot counts are install-time settings. Blocking (JDBC); the engine calls it on {@code boundedElastic}.
 */
@NullMarked
package dev.riffle.migrations;

import org.jspecify.annotations.NullMarked;
