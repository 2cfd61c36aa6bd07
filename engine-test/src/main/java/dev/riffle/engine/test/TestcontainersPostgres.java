package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import java.util.Map;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * The Testcontainers step of {@link DatabaseLocator}, kept in its own class so that the locator never links against
 * Testcontainers (an optional dependency) unless the classes are actually on the classpath.
 */
final class TestcontainersPostgres {

    /** Lets users pin the image (e.g. to their production major) without code. */
    static final String IMAGE_ENV = "RIFFLE_TEST_POSTGRES_IMAGE";
    static final String DEFAULT_IMAGE = "postgres:17-alpine";

    private TestcontainersPostgres() {}

    /** Asks Docker; takes 1-2 s the first time when there is no daemon, hence the cheaper hint check before it. */
    static boolean dockerAvailable() {
        return DockerClientFactory.instance().isDockerAvailable();
    }

    /** Starts a container that lives until JVM exit (Testcontainers' Ryuk reaps it even if the hook cannot run). */
    static LocatedDatabase start(Map<String, String> env) {
        String image = env.getOrDefault(IMAGE_ENV, DEFAULT_IMAGE);
        PostgreSQLContainer container =
                new PostgreSQLContainer(DockerImageName.parse(image).asCompatibleSubstituteFor("postgres"));
        container.start();
        Runtime.getRuntime().addShutdownHook(new Thread(container::stop, "riffle-testcontainers-pg-shutdown"));
        DatabaseUrl url = new DatabaseUrl(container.getHost(), container.getMappedPort(5432),
                container.getDatabaseName(), container.getUsername(), container.getPassword(), Map.of());
        return new LocatedDatabase(url, LocatedDatabase.Source.TESTCONTAINERS,
                "Testcontainers " + image + " on " + url.host() + ":" + url.port());
    }
}
