package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.NewJob;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;
import reactor.core.publisher.Mono;

/**
 * An engine injected into {@code @BeforeAll} serves the whole class and is closed after it, before the class's
 * schema is dropped. Runs a class of its own through the launcher, so the check can look after that class's end.
 */
class ClassLevelEngineTest {

    private static final String ENABLED = "riffle.test.classLevelEngineSample";
    private static volatile Riffle engine;
    private static volatile String schema;
    private static volatile Boolean closedWhenSchemaDropped;

    @Test
    void theClassEngineIsClosedBeforeTheSchemaIsDropped() {
        TestExecutionSummary summary = run(Sample.class);

        assertThat(summary.getFailures()).isEmpty();
        assertThat(summary.getTestsSucceededCount()).isEqualTo(2);
        assertThat(closedWhenSchemaDropped).as("engine closed by the time the schema was dropped").isTrue();
        assertThat(engine.isDisposed()).isTrue();
        // The schema is gone, so the drop did not wait for (or fail on) the engine's connections.
        assertThat(DatabaseLocator.locate().url()).isNotNull();
        try (var c = Jdbc.connect(DatabaseLocator.url()); var ps = c.prepareStatement(
                "SELECT count(*) FROM pg_namespace WHERE nspname = ?")) {
            ps.setString(1, schema);
            try (var rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getLong(1)).isZero();
            }
        } catch (java.sql.SQLException e) {
            throw new AssertionError(e);
        }
    }

    private static TestExecutionSummary run(Class<?> testClass) {
        System.setProperty(ENABLED, "true");
        try {
            Launcher launcher = LauncherFactory.create();
            SummaryGeneratingListener listener = new SummaryGeneratingListener();
            launcher.execute(LauncherDiscoveryRequestBuilder.request().selectors(selectClass(testClass)).build(), listener);
            return listener.getSummary();
        } finally {
            System.clearProperty(ENABLED);
        }
    }

    /** Looks at the engine after RiffleDatabaseExtension's afterAll dropped the schema. */
    static final class AfterTheDrop implements AfterAllCallback {
        @Override
        public void afterAll(ExtensionContext context) {
            closedWhenSchemaDropped = engine != null && engine.isDisposed();
        }
    }

    /** Runs only inside {@link #run}. */
    @EnabledIfSystemProperty(named = ENABLED, matches = "true")
    @ExtendWith(AfterTheDrop.class) // registered before @RiffleTest's extensions, so its afterAll runs after theirs
    @RiffleTest
    static class Sample {
        private static Riffle shared;

        @BeforeAll
        static void start(Riffle riffle, TestDatabase db) {
            shared = riffle;
            engine = riffle;
            schema = db.schema();
        }

        @Test
        void first(RiffleTestKit kit) {
            assertThat(kit.riffle()).isNotSameAs(shared);
            assertThat(shared.isDisposed()).isFalse();
        }

        @Test
        void second() {
            long id = shared.client().enqueue(NewJob.builder("k").build()).block();
            assertThat(RiffleTestKit.of(shared).drain(Map.of("k", job -> Mono.empty()), "default").block())
                    .extracting(r -> r.jobId()).containsExactly(id);
        }
    }
}
