package dev.riffle.spring.boot;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.ArgsCodec;
import dev.riffle.engine.api.CronSchedule;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryOptions;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcConnectionDetails;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;

/**
 * Auto-configuration of a Riffle engine (docs/spring-boot.md).
 *
 * <p>Unless the application defines its own {@link Riffle} bean: a {@link RiffleConfig} from {@code riffle.*}
 * ({@link RiffleProperties}) on the application's R2DBC {@code ConnectionFactory} bean (or {@code riffle.url}), with
 * the application's {@code MeterRegistry} and {@code ObservationRegistry} when it has exactly one of each (tracing,
 * docs/tracing.md), migrations when riffle-migrations is on the
 * classpath, the application's {@link ArgsCodec} bean when it has exactly one, every {@link CronSchedule} bean, and
 * every {@link RiffleConfigCustomizer}; then the engine, started while the context refreshes (so the
 * application does not come up on an unmigrated or unreachable schema). For whichever {@code Riffle} bean there is:
 * the handler beans by kind ({@link RiffleHandlers}) and the {@link RiffleLifecycle} that runs them and shuts the
 * engine down gracefully. {@code riffle.enabled=false} turns all of it off.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
        "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
        "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
        "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration"})
@ConditionalOnClass(Riffle.class)
@ConditionalOnBooleanProperty(name = "riffle.enabled", matchIfMissing = true)
@EnableConfigurationProperties(RiffleProperties.class)
public class RiffleAutoConfiguration {

    /** Not for direct use: Spring instantiates auto-configuration classes. */
    public RiffleAutoConfiguration() {}

    /** Every {@code JobHandler} bean by kind. */
    @Bean
    @ConditionalOnMissingBean
    RiffleHandlers riffleHandlers(ListableBeanFactory beans) {
        return RiffleHandlers.fromBeans(beans);
    }

    /** Workers and graceful shutdown for the engine bean, the starter's or the application's. */
    @Bean
    @ConditionalOnMissingBean
    RiffleLifecycle riffleLifecycle(Riffle riffle, RiffleHandlers handlers, RiffleProperties properties) {
        RiffleProperties.Worker w = properties.getWorker();
        return new RiffleLifecycle(riffle, handlers, w.isEnabled(), w.getConcurrency(), w.getQueues(),
                properties.getShutdown().getGracePeriod());
    }

    /** The engine and its configuration, when the application has no {@code Riffle} bean of its own. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingBean(Riffle.class)
    static class EngineConfiguration {

        @Bean
        @ConditionalOnMissingBean
        RiffleConfig riffleConfig(RiffleProperties properties, ObjectProvider<ConnectionFactory> connectionFactory,
                                  ObjectProvider<MigrationSource> migrationSources, Environment env,
                                  ResourceLoader resourceLoader, ObjectProvider<RiffleConfigCustomizer> customizers) {
            return RiffleConfigs.build(properties, connectionFactory.getIfUnique(),
                    migrationSources.orderedStream().toList(), env,
                    RiffleConfigs.migrationsPresent(resourceLoader.getClassLoader()),
                    customizers.orderedStream().toList());
        }

        /**
         * Starts the engine (connect, migrate, check the schema) on the thread refreshing the context, waiting up to
         * {@code riffle.startup-timeout}. Shut down gracefully by {@link RiffleLifecycle}, which stops before any
         * bean is destroyed; {@code dispose} (idempotent, non-blocking) then closes only an engine nothing shut
         * down: one whose context failed to start after the engine did, and whose maintenance loops would
         * otherwise keep running on the application's closed pool.
         */
        @Bean(destroyMethod = "dispose")
        Riffle riffle(RiffleConfig config, RiffleProperties properties) {
            return Objects.requireNonNull(Riffle.start(config).block(properties.getStartupTimeout()), "riffle");
        }
    }

    /** Flyway's JDBC coordinates from Boot's R2DBC connection details (spring.r2dbc.*, service connections). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(R2dbcConnectionDetails.class)
    static class R2dbcMigrationSourceConfiguration {

        @Bean
        MigrationSource riffleR2dbcMigrationSource(ObjectProvider<R2dbcConnectionDetails> details) {
            return () -> {
                R2dbcConnectionDetails d = details.getIfUnique();
                return d == null ? null : fromOptions(d.getConnectionFactoryOptions());
            };
        }

        static @Nullable DatabaseUrl fromOptions(ConnectionFactoryOptions o) {
            Object host = o.getValue(ConnectionFactoryOptions.HOST);
            Object database = o.getValue(ConnectionFactoryOptions.DATABASE);
            if (host == null || database == null) {
                return null;
            }
            Object port = o.getValue(ConnectionFactoryOptions.PORT);
            Object user = o.getValue(ConnectionFactoryOptions.USER);
            Object password = o.getValue(ConnectionFactoryOptions.PASSWORD);
            return new DatabaseUrl(host.toString(), port == null ? 5432 : Integer.parseInt(port.toString()),
                    database.toString(), user == null ? "postgres" : user.toString(),
                    password == null ? null : password.toString(), Map.of());
        }
    }

    /**
     * The application's {@link ArgsCodec} when it has exactly one (typed job args), and every {@link CronSchedule}
     * bean as a schedule registered in code. Ordered first, so a customizer of the application can still override.
     */
    @Bean
    @Order(0)
    RiffleConfigCustomizer riffleCodecAndSchedulesCustomizer(ObjectProvider<ArgsCodec> codecs,
                                                             ObjectProvider<CronSchedule> schedules) {
        return builder -> {
            ArgsCodec codec = codecs.getIfUnique();
            if (codec != null) {
                builder.argsCodec(codec);
            }
            schedules.orderedStream().forEach(builder::schedule);
        };
    }

    /** The application's {@code MeterRegistry}, when it has exactly one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class MicrometerConfiguration {

        @Bean
        @Order(0)
        RiffleConfigCustomizer riffleMeterRegistryCustomizer(ObjectProvider<MeterRegistry> registries) {
            return builder -> {
                MeterRegistry registry = registries.getIfUnique();
                if (registry != null) {
                    builder.meterRegistry(registry);
                }
            };
        }
    }

    /**
     * The application's {@code ObservationRegistry}, when it has exactly one: enqueue, claim, handler and completion
     * are observed, and with Boot's tracing (a Brave or OpenTelemetry bridge) the trace of the request that enqueued
     * a job continues in its handler (docs/tracing.md).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ObservationRegistry.class)
    static class ObservationConfiguration {

        @Bean
        @Order(0)
        RiffleConfigCustomizer riffleObservationRegistryCustomizer(ObjectProvider<ObservationRegistry> registries) {
            return builder -> {
                ObservationRegistry registry = registries.getIfUnique();
                if (registry != null) {
                    builder.observationRegistry(registry);
                }
            };
        }
    }
}
