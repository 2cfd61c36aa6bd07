package dev.riffle.engine.metrics;

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
 * Micrometer (micrometer-core for meters, micrometer-observation for tracing) is an optional dependency of the
 * engine. This module's tests have it (for {@link MetersIT} and {@code TracingIT}), so this test runs an engine in a
 * class loader built from the test class path minus every Micrometer, Prometheus and Brave jar, and records every
 * class it is asked for: without a registry a job is enqueued, claimed, handled and completed, and no Micrometer
 * class, nor the engine's Micrometer bindings, is even asked for.
 */
@RiffleTest
class MicrometerOptionalIT {

    private static final class RecordingLoader extends URLClassLoader {
        final List<String> requested = new CopyOnWriteArrayList<>();

        RecordingLoader(URL[] urls) {
            super("no-micrometer", urls, ClassLoader.getPlatformClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            // Reactor itself probes io.micrometer.context (context-propagation) and copes with its absence.
            if (name.startsWith("io.micrometer.core.") || name.startsWith("io.micrometer.observation.")
                    || name.startsWith("io.prometheus.")
                    || name.startsWith("io.micrometer.tracing.") || name.startsWith("brave.")
                    || name.equals("dev.riffle.engine.internal.metrics.MicrometerBinding")
                    || name.equals("dev.riffle.engine.internal.tracing.ObservationTracing")) {
                requested.add(name);
            }
            return super.loadClass(name, resolve);
        }
    }

    private static boolean micrometer(String entry) {
        String e = entry.replace('\\', '/');
        return e.contains("/io/micrometer/") || e.contains("/io/prometheus/") || e.contains("/io/zipkin/");
    }

    @Test
    void anEngineWithoutARegistryRunsAJobWithoutMicrometerOnTheClassPath(TestDatabase db) throws Exception {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<URL> kept = new ArrayList<>();
        List<String> dropped = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isBlank()) {
                continue;
            }
            if (micrometer(entry)) {
                dropped.add(entry);
            } else {
                kept.add(new File(entry).toURI().toURL());
            }
        }
        assertThat(dropped).anyMatch(e -> e.replace('\\', '/').contains("/io/micrometer/micrometer-core/"))
                .anyMatch(e -> e.replace('\\', '/').contains("/io/micrometer/micrometer-observation/"));

        try (RecordingLoader loader = new RecordingLoader(kept.toArray(URL[]::new))) {
            assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            assertThatThrownBy(() -> Class.forName("io.micrometer.observation.ObservationRegistry", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            loader.requested.clear();

            Class<?> probe = Class.forName("dev.riffle.engine.it.NoMigrationsProbe", true, loader);
            var url = db.url();
            Object[] args = {url.host(), url.port(), url.database(), url.user(), url.password(), db.schema()};
            Class<?>[] types = {String.class, int.class, String.class, String.class, String.class, String.class};
            String off = (String) probe.getMethod("migrateOff", types).invoke(null, args);
            assertThat(off).as("a job ran without Micrometer").matches("handled=\\d+");
            assertThat(loader.requested).as("Micrometer classes asked for without a registry").isEmpty();
        }
    }
}
