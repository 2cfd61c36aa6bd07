/**
 * Running Riffle's Flyway migrations at start, when asked: {@code Migrator} checks that the optional
 * {@code riffle-migrations} module (which brings Flyway and the PostgreSQL JDBC driver) is on the classpath and
 * fails with the dependency to add when it is not; only then is {@code FlywayRun}, the one class that names the
 * migrations module, loaded. With migrations off, nothing here touches Flyway or JDBC.
 */
@NullMarked
package dev.riffle.engine.internal.migrate;

import org.jspecify.annotations.NullMarked;
