package dev.riffle.spring.boot;

import dev.riffle.engine.RiffleConfig;

/**
 * Adjusts the {@link RiffleConfig} the starter builds from {@code riffle.*} properties, before it is built: per-queue
 * settings in code, a clock, a scheduler, anything {@link RiffleConfig.Builder} has. Every bean of this type is
 * applied in {@code @Order}; the starter's own (the {@code MeterRegistry} binding) run first. Not used when the
 * application defines its own {@code RiffleConfig} or {@code Riffle} bean.
 */
@FunctionalInterface
public interface RiffleConfigCustomizer {

    /** Changes {@code builder} in place. */
    void customize(RiffleConfig.Builder builder);
}
