package dev.riffle.spring.boot;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.QueueConfig;
import io.r2dbc.spi.ConnectionFactory;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/** Builds the engine's {@link RiffleConfig} from {@link RiffleProperties}, the application's beans and customizers. */
final class RiffleConfigs {

    private static final Logger log = LoggerFactory.getLogger(RiffleConfigs.class);
    static final String MIGRATIONS_CLASS = "dev.riffle.migrations.RiffleMigrations";
    static final String FLYWAY_CLASS = "org.flywaydb.core.Flyway";

    private RiffleConfigs() {}

    /** Whether Riffle's migrations (riffle-migrations, and Flyway under it) are on {@code loader}'s classpath. */
    static boolean migrationsPresent(@Nullable ClassLoader loader) {
        return ClassUtils.isPresent(MIGRATIONS_CLASS, loader) && ClassUtils.isPresent(FLYWAY_CLASS, loader);
    }

    static RiffleConfig build(RiffleProperties p, @Nullable ConnectionFactory connectionFactory,
                              List<MigrationSource> migrationSources, Environment env, boolean migrationsPresent,
                              List<RiffleConfigCustomizer> customizers) {
        RiffleConfig.Builder b = RiffleConfig.builder();
        boolean ownUrl = p.getUrl() != null && !p.getUrl().isBlank();
        if (ownUrl) {
            b.url(p.getUrl());
        } else if (connectionFactory != null) {
            b.connectionFactory(connectionFactory);
        } else {
            throw new IllegalStateException("Riffle needs a database: define an R2DBC ConnectionFactory bean (for "
                    + "example spring-boot-starter-r2dbc with spring.r2dbc.url), or set riffle.url; "
                    + "riffle.enabled=false turns the engine off");
        }
        boolean migrate = migrate(p.getMigrate(), migrationsPresent);
        b.migrate(migrate);
        if (migrate) {
            DatabaseUrl migrationUrl = migrationUrl(p.getMigration(), env, migrationSources);
            if (migrationUrl != null) {
                b.migrationUrl(migrationUrl);
            } else if (!ownUrl) {
                throw new IllegalStateException("Riffle migrates at start (riffle-migrations is on the classpath) but "
                        + "cannot tell where Flyway should connect: set riffle.migration.url (JDBC), spring.flyway.url "
                        + "or spring.r2dbc.url, or set riffle.migrate=false and migrate the schema yourself");
            }
        }
        b.schema(p.getSchema())
                .poolSize(p.getPoolSize())
                .applicationName(p.getApplicationName())
                .maxClaimBatch(p.getMaxClaimBatch())
                .completionBatchSize(p.getCompletionBatchSize())
                .completionWindow(p.getCompletionWindow())
                .pollInterval(p.getPollInterval())
                .safetyPollInterval(p.getSafetyPollInterval())
                .meterRefreshInterval(p.getMeterRefreshInterval())
                .maxArgsBytes(p.getMaxArgsBytes())
                .copyEnqueueThreshold(p.getCopyEnqueueThreshold())
                .workPrefetch(p.isWorkPrefetch())
                .claimConcurrency(p.getClaimConcurrency())
                .dlqByDefault(p.isDlqByDefault());
        RiffleProperties.Maintenance m = p.getMaintenance();
        b.maintenance(MaintenanceConfig.builder()
                .enabled(m.isEnabled())
                .historyRetention(m.getHistoryRetention())
                .staleAfter(m.getStaleAfter())
                .heartbeatInterval(m.getHeartbeatInterval())
                .dlqRetention(m.getDlqRetention())
                .build());
        for (Map.Entry<String, RiffleProperties.Queue> e : p.getQueues().entrySet()) {
            RiffleProperties.Queue q = e.getValue();
            QueueConfig qc = new QueueConfig(e.getKey(), q.getDeadline(), q.getDlq(), q.isMaterializedLeases(),
                    q.getEnqueueShards());
            b.queue(qc);
        }
        customizers.forEach(c -> c.customize(b));
        return b.build();
    }

    /** {@code riffle.migrate}: explicit, else whether the migrations are present. */
    static boolean migrate(@Nullable Boolean setting, boolean migrationsPresent) {
        if (setting == null) {
            if (!migrationsPresent) {
                log.info("riffle-migrations is not on the classpath: the engine expects a migrated schema "
                        + "(riffle.migrate=false); add dev.riffle:riffle-migrations to migrate at start");
            }
            return migrationsPresent;
        }
        if (setting && !migrationsPresent) {
            throw new IllegalStateException("riffle.migrate=true needs dev.riffle:riffle-migrations (and Flyway) on the "
                    + "classpath: add the dependency, or set riffle.migrate=false and migrate the schema yourself");
        }
        return setting;
    }

    /**
     * Flyway's JDBC coordinates: riffle.migration.url (with riffle.migration.username/password), else
     * spring.flyway.url (with spring.flyway.user/password), else the first source that has some (the application's
     * R2DBC connection details); null when none.
     */
    static @Nullable DatabaseUrl migrationUrl(RiffleProperties.Migration m, Environment env,
                                              List<MigrationSource> sources) {
        if (m.getUrl() != null && !m.getUrl().isBlank()) {
            return withCredentials(DatabaseUrl.parse(m.getUrl()), m.getUsername(), m.getPassword());
        }
        String flywayUrl = env.getProperty("spring.flyway.url");
        if (flywayUrl != null && !flywayUrl.isBlank()) {
            return withCredentials(DatabaseUrl.parse(flywayUrl), env.getProperty("spring.flyway.user"),
                    env.getProperty("spring.flyway.password"));
        }
        for (MigrationSource s : sources) {
            DatabaseUrl u = s.migrationUrl();
            if (u != null) {
                return u;
            }
        }
        return null;
    }

    private static DatabaseUrl withCredentials(DatabaseUrl u, @Nullable String user, @Nullable String password) {
        return new DatabaseUrl(u.host(), u.port(), u.database(), user != null ? user : u.user(),
                password != null ? password : u.password(), u.options());
    }
}
