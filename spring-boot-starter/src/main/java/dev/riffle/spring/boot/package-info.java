/**
 * Spring Boot auto-configuration for Riffle (docs/spring-boot.md): a {@link dev.riffle.engine.Riffle} engine on the
 * application's R2DBC {@code ConnectionFactory}, configured by {@code riffle.*} properties
 * ({@link dev.riffle.spring.boot.RiffleProperties}); {@link dev.riffle.engine.api.JobHandler} beans registered by kind
 * ({@link dev.riffle.spring.boot.RiffleHandler}, {@link dev.riffle.spring.boot.RiffleJobHandler}) and run by
 * {@link dev.riffle.spring.boot.RiffleLifecycle}, which also shuts the engine down gracefully in Boot's shutdown
 * phase; a health indicator ({@link dev.riffle.spring.boot.RiffleHealthIndicator}); the application's
 * {@code MeterRegistry} and {@code ObservationRegistry} (tracing) when it has one; migrations when {@code riffle-migrations} (Flyway) is on the classpath.
 */
@NullMarked
package dev.riffle.spring.boot;

import org.jspecify.annotations.NullMarked;
