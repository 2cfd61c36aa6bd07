package dev.riffle.examples.boot;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/**
 * The shop. Riffle comes from the starter: the engine on the app's R2DBC pool (spring.r2dbc.*), its schema migrated
 * at start (riffle-migrations is a dependency), the {@code @RiffleHandler} bean run by kind, graceful shutdown and
 * the {@code riffle} health contributor. Run it with a PostgreSQL at spring.r2dbc.url (application.yaml).
 */
@SpringBootApplication
@EnableConfigurationProperties(ShopProperties.class)
public class ShopApplication {

    /** Starts the shop. */
    public static void main(String[] args) {
        SpringApplication.run(ShopApplication.class, args);
    }
}
