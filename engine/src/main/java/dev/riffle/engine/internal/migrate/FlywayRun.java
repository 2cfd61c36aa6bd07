package dev.riffle.engine.internal.migrate;

import dev.riffle.migrations.RiffleMigrations;

/** The one engine class that names the migrations module; loaded only after {@link Migrator} found it. */
final class FlywayRun {
    private FlywayRun() {}

    /** Migrates and describes what was done. Blocking. */
    static String migrate(String jdbcUrl, String user, String password, String schema) {
        RiffleMigrations.Result r = RiffleMigrations.migrate(jdbcUrl, user, password,
                RiffleMigrations.Settings.of(schema));
        return "schema " + r.schema() + " migrated (" + r.migrationsExecuted() + " migrations applied, version "
                + r.targetVersion() + ")";
    }
}
