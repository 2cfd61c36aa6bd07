package dev.riffle.spring.boot;

import dev.riffle.engine.Riffle;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code riffle} health contributor ({@link RiffleHealthIndicator}), when Boot's health support
 * (spring-boot-health, with spring-boot-starter-actuator) is present and a {@link Riffle} bean exists;
 * {@code management.health.riffle.enabled=false} turns it off.
 */
@AutoConfiguration(after = RiffleAutoConfiguration.class)
@ConditionalOnClass({Riffle.class, ReactiveHealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnBean(Riffle.class)
@ConditionalOnEnabledHealthIndicator("riffle")
public class RiffleHealthAutoConfiguration {

    /** Not for direct use: Spring instantiates auto-configuration classes. */
    public RiffleHealthAutoConfiguration() {}

    /** The indicator; its bean name makes the contributor's name {@code riffle}. */
    @Bean
    @ConditionalOnMissingBean(name = "riffleHealthIndicator")
    RiffleHealthIndicator riffleHealthIndicator(Riffle riffle) {
        return new RiffleHealthIndicator(riffle);
    }
}
