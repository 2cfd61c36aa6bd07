package dev.riffle.migrations;

import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;

/**
 * Applies the Riffle schema migrations with Flyway.
 *
 * <p>This class is blocking (JDBC). The engine calls it on {@code Schedulers.boundedElastic()}; tests and tools
 * may call it directly from a plain thread. The schema name is validated here, once, and only ever used quoted.
 * Ring slot counts are install-time parameters: they are written into the ring state tables by the first
 * migration and cannot change afterwards (a different slot count means a new schema).
 *
 * <p>Layout (docs/adr/0007): versioned {@code V<n>__} files hold the tables and are append-only once released;
 * every function lives in a repeatable {@code R__<nn>_<mechanism>.sql} file, which Flyway applies after the versioned
 * ones, in name order, and again only when its text changes. Migrating an up-to-date schema applies nothing.
 */
public final class RiffleMigrations {

    /** Default schema name. */
    public static final String DEFAULT_SCHEMA = "riffle";
    /** Default number of queue-ring slots (docs/design/rings-and-proofs.md). */
    public static final int DEFAULT_QUEUE_SLOTS = 16;
    /** Default number of lease-ring slots. */
    public static final int DEFAULT_LEASE_SLOTS = 8;
    /** Default number of claim-ring slots. */
    public static final int DEFAULT_CLAIM_SLOTS = 8;

    private static final Pattern SCHEMA_NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    /** Where the SQL migrations live on the classpath. */
    public static final String LOCATION = "classpath:db/riffle/migration";

    private RiffleMigrations() {}

    /**
     * Install-time settings.
     *
     * @param schema the schema to create and migrate; must match {@code [a-z_][a-z0-9_]{0,62}}
     * @param queueSlots queue-ring partitions (4..64)
     * @param leaseSlots lease-ring partitions (2..64)
     * @param claimSlots claim-ring partitions (2..64)
     */
    public record Settings(String schema, int queueSlots, int leaseSlots, int claimSlots) {
        /** Validates every field; throws {@link IllegalArgumentException} naming the field. */
        public Settings {
            validateSchemaName(schema);
            requireRange("queueSlots", queueSlots, 4, 64);
            requireRange("leaseSlots", leaseSlots, 2, 64);
            requireRange("claimSlots", claimSlots, 2, 64);
        }

        /** Defaults with the given schema. */
        public static Settings of(String schema) {
            return new Settings(schema, DEFAULT_QUEUE_SLOTS, DEFAULT_LEASE_SLOTS, DEFAULT_CLAIM_SLOTS);
        }
    }

    /** What a migration run did. */
    public record Result(String schema, int migrationsExecuted, String targetVersion) {}

    /**
     * Validates a schema name against {@code [a-z_][a-z0-9_]{0,62}}.
     *
     * @throws IllegalArgumentException naming the rule when the name does not match
     */
    public static String validateSchemaName(String schema) {
        Objects.requireNonNull(schema, "schema");
        if (!SCHEMA_NAME.matcher(schema).matches()) {
            throw new IllegalArgumentException("schema name '" + schema
                    + "' is invalid: it must match [a-z_][a-z0-9_]{0,62} (lower-case letters, digits, underscore)");
        }
        return schema;
    }

    private static void requireRange(String field, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", got " + value);
        }
    }

    /** Migrates {@code settings.schema()} to the latest version. Blocking. */
    public static Result migrate(String jdbcUrl, String user, String password, Settings settings) {
        FluentConfiguration cfg = Flyway.configure(RiffleMigrations.class.getClassLoader())
                .dataSource(jdbcUrl, user, password)
                .schemas(settings.schema())
                .defaultSchema(settings.schema())
                .createSchemas(true)
                .locations(LOCATION)
                .placeholders(Map.of(
                        "schema", "\"" + settings.schema() + "\"",
                        "schema_name", settings.schema(),
                        "queue_slots", Integer.toString(settings.queueSlots()),
                        "lease_slots", Integer.toString(settings.leaseSlots()),
                        "claim_slots", Integer.toString(settings.claimSlots())))
                .failOnMissingLocations(true);
        // Flyway's transactional lock keeps an idle-in-transaction connection that blocks
        // CREATE INDEX CONCURRENTLY and pins xmin.
        cfg.getConfigurationExtension(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
        MigrateResult r = cfg.load().migrate();
        return new Result(settings.schema(), r.migrationsExecuted, r.targetSchemaVersion);
    }
}
