package dev.riffle.cli;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.migrations.RiffleMigrations;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code riffle migrate}: creates or upgrades the schema (Flyway, through riffle-migrations). */
@Command(name = "migrate", mixinStandardHelpOptions = true,
        description = "Create the schema, or upgrade it to this version's migrations. The slot counts apply only "
                + "when the schema is created.")
final class MigrateCommand extends Base {

    @Option(names = "--queue-slots", description = "queue-ring partitions, 4..64 (default: ${DEFAULT-VALUE})")
    int queueSlots = RiffleMigrations.DEFAULT_QUEUE_SLOTS;

    @Option(names = "--lease-slots", description = "lease-ring partitions, 2..64 (default: ${DEFAULT-VALUE})")
    int leaseSlots = RiffleMigrations.DEFAULT_LEASE_SLOTS;

    @Option(names = "--claim-slots", description = "claim-ring partitions, 2..64 (default: ${DEFAULT-VALUE})")
    int claimSlots = RiffleMigrations.DEFAULT_CLAIM_SLOTS;

    @Override
    boolean needsEngine() {
        return false;
    }

    @Override
    int run(Riffle unused) {
        RiffleCli root = root();
        DatabaseUrl url = root.databaseUrl(spec.commandLine());
        RiffleMigrations.Settings settings = new RiffleMigrations.Settings(root.schemaName(), queueSlots, leaseSlots,
                claimSlots);
        RiffleMigrations.Result r = RiffleMigrations.migrate(url.jdbcUrl(), url.user(),
                url.password() == null ? "" : url.password(), settings);
        if (json()) {
            printJson(g -> {
                g.writeStartObject();
                g.writeStringProperty("schema", r.schema());
                g.writeNumberProperty("migrationsExecuted", r.migrationsExecuted());
                g.writeStringProperty("version", r.targetVersion());
                g.writeEndObject();
            });
        } else {
            out().printf("schema %s: %d migration(s) applied, at version %s%n", r.schema(), r.migrationsExecuted(),
                    r.targetVersion());
        }
        return RiffleCli.OK;
    }
}
