package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.migrations.RiffleMigrations;
import java.util.Map;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.flywaydb.database.postgresql.PostgreSQLConfigurationExtension;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * docs/migrations.md, "Running Riffle's migrations from your own Flyway", done exactly as written: a plain
 * {@code Flyway.configure()} with the documented location, schema, history table and placeholders migrates a fresh
 * schema; an engine with migrate(false) then runs a job on it; and the engine's own migrator finds nothing to do (the
 * two agree on history and checksums, so an application can switch between them).
 */
@RiffleTest
class UserFlywayIT {

    @Test
    void theDocumentedFlywaySetupMigratesASchemaTheEngineRunsOn(TestDatabase db) {
        String jdbcUrl = db.url().jdbcUrl();
        String user = db.url().user();
        String password = db.url().password() == null ? "" : db.url().password();
        String schema = db.schema() + "_own";
        try {
            // --- as in docs/migrations.md ---
            FluentConfiguration riffle = Flyway.configure()
                    .dataSource(jdbcUrl, user, password)
                    .locations("classpath:db/riffle/migration")
                    .schemas(schema)                  // created if missing; holds the history table
                    .defaultSchema(schema)
                    .createSchemas(true)
                    .table("flyway_schema_history")   // Flyway's default, inside the Riffle schema
                    .placeholders(Map.of(
                            "schema", "\"" + schema + "\"",  // quoted identifier
                            "schema_name", schema,           // bare name
                            "queue_slots", "16",
                            "lease_slots", "8",
                            "claim_slots", "8"));
            riffle.getConfigurationExtension(PostgreSQLConfigurationExtension.class).setTransactionalLock(false);
            MigrateResult result = riffle.load().migrate();
            // --- end ---
            assertThat(result.success).isTrue();
            assertThat(result.migrationsExecuted).isPositive();

            RiffleMigrations.Result again = RiffleMigrations.migrate(jdbcUrl, user, password,
                    RiffleMigrations.Settings.of(schema));
            assertThat(again.migrationsExecuted()).as("the engine's migrator sees an up-to-date schema").isZero();

            Riffle engine = Riffle.start(RiffleConfig.builder().url(db.url()).schema(schema).migrate(false).build())
                    .block(Engines.TIMEOUT);
            try {
                long id = engine.client().enqueue(NewJob.builder("own.flyway").queue("own").build()).block(Engines.TIMEOUT);
                JobResult done = engine.work(Map.of("own.flyway", job -> Mono.just(JobOutcome.complete())), 1, "own")
                        .filter(r -> r.jobId() == id).next().block(Engines.TIMEOUT);
                assertThat(done.accepted()).isTrue();
                assertThat(engine.counts("own").block(Engines.TIMEOUT).completed()).isEqualTo(1);
            } finally {
                Engines.close(engine);
            }
        } finally {
            db.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
        }
    }
}
