package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@code riffle-migrations} is an optional dependency of the engine (issue #13 item 2). Proved by running an engine in
 * a class loader built from this JVM's test class path minus Flyway, pgJDBC and the migrations module, which also
 * records every class it is asked for: with migrate(false) a job runs and no class of those three is even asked
 * for; with migrate(true) start fails with a message naming the dependency to add.
 */
@RiffleTest
class MigrationsOptionalIT {

    /** Class-name prefixes of what the engine must not touch with migrate(false). */
    private static final List<String> FORBIDDEN = List.of("dev.riffle.migrations.", "org.flywaydb.", "org.postgresql.Driver",
            "org.postgresql.jdbc.", "org.postgresql.core.", "java.sql.DriverManager");

    /** Loads from URLs only (the platform loader is its parent) and records requests for forbidden classes. */
    private static final class RecordingLoader extends URLClassLoader {
        final List<String> requested = new CopyOnWriteArrayList<>();

        RecordingLoader(URL[] urls) {
            super("no-migrations", urls, ClassLoader.getPlatformClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (FORBIDDEN.stream().anyMatch(name::startsWith)) {
                requested.add(name);
            }
            return super.loadClass(name, resolve);
        }
    }

    private static boolean withoutMigrations(String entry) {
        String e = entry.replace('\\', '/');
        return e.contains("/org/flywaydb/") || e.contains("/org/postgresql/postgresql/")
                || e.contains("riffle-migrations") || e.contains("/migrations/target/");
    }

    @Test
    void migrateOffRunsWithoutFlywayPgJdbcOrTheMigrationsModuleAndMigrateOnNamesTheDependency(TestDatabase db)
            throws Exception {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<URL> kept = new ArrayList<>();
        List<String> dropped = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isBlank()) {
                continue;
            }
            if (withoutMigrations(entry)) {
                dropped.add(entry);
            } else {
                kept.add(new File(entry).toURI().toURL());
            }
        }
        // The test JVM has all three (the kit migrates with them), so each was really taken away.
        assertThat(dropped).anyMatch(e -> e.replace('\\', '/').contains("/org/flywaydb/flyway-core/"))
                .anyMatch(e -> e.replace('\\', '/').contains("/org/postgresql/postgresql/"))
                .anyMatch(e -> e.contains("migrations"));

        try (RecordingLoader loader = new RecordingLoader(kept.toArray(URL[]::new))) {
            assertThatThrownBy(() -> Class.forName("org.flywaydb.core.Flyway", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            assertThatThrownBy(() -> Class.forName("dev.riffle.migrations.RiffleMigrations", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            loader.requested.clear();

            Class<?> probe = Class.forName(NoMigrationsProbe.class.getName(), true, loader);
            assertThat(probe.getClassLoader()).isSameAs(loader);
            var url = db.url();
            Object[] args = {url.host(), url.port(), url.database(), url.user(), url.password(), db.schema()};
            Class<?>[] types = {String.class, int.class, String.class, String.class, String.class, String.class};

            String off = (String) probe.getMethod("migrateOff", types).invoke(null, args);
            assertThat(off).as("a job ran with migrate(false)").matches("handled=\\d+");
            assertThat(loader.requested).as("Flyway/JDBC/migrations classes asked for with migrate(false)").isEmpty();

            String on = (String) probe.getMethod("migrateOn", types).invoke(null, args);
            assertThat(on).as("migrate(true) without the module")
                    .startsWith("java.lang.IllegalStateException: migrate(true) needs the dev.riffle:riffle-migrations dependency")
                    .contains("docs/migrations.md");
            // migrate(true) only asked whether the module is there (and stopped at the first class missing).
            assertThat(loader.requested).containsExactly("dev.riffle.migrations.RiffleMigrations");
        }
    }
}
