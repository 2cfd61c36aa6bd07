package dev.riffle.engine.test;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import java.lang.reflect.Parameter;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestInstances;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Injects started engines into {@link RiffleTest} classes: parameters of type {@link Riffle}, {@link RiffleTestKit}
 * (over the same engine) and {@link ManualRiffle} (an engine of its own, in manual mode). Usually applied through
 * {@link RiffleTest}.
 *
 * <p>The engine runs on the test class's schema ({@link TestDatabase}) with {@link RiffleTestKit#testDefaults} adjusted
 * by {@link RiffleTestConfig} when the test class implements it, and is up (LISTEN connected) before the method runs.
 * One engine per JUnit context: a test method and its {@code @BeforeEach}/{@code @AfterEach} methods share one, closed
 * after the test (after {@code @AfterEach}); an engine injected into a {@code @BeforeAll} method or a
 * {@code PER_CLASS} constructor lives until the class is done (closed before its schema is dropped). {@code Riffle} and {@code RiffleTestKit} parameters of
 * one context are the same engine; a {@code ManualRiffle} is always a second one.
 */
public final class RiffleEngineExtension implements ParameterResolver, AfterAllCallback {

    private static final Logger log = LoggerFactory.getLogger(RiffleEngineExtension.class);
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(RiffleEngineExtension.class);

    /** Created by JUnit. */
    public RiffleEngineExtension() {}

    /**
     * Closes the engines of the class context now, not when JUnit closes the context's store: that happens after
     * every after-all callback, so after {@link RiffleDatabaseExtension} dropped the schema under them. (After-all
     * callbacks run in reverse registration order, and {@link RiffleTest} registers this extension second.)
     */
    @Override
    public void afterAll(ExtensionContext context) {
        for (String what : List.of("engine", "manual")) {
            Held held = context.getStore(NAMESPACE).remove(what + ":" + context.getUniqueId(), Held.class);
            if (held != null) {
                held.close();
            }
        }
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        Class<?> type = parameterContext.getParameter().getType();
        return type == Riffle.class || type == RiffleTestKit.class || type == ManualRiffle.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        Parameter parameter = parameterContext.getParameter();
        Class<?> type = parameter.getType();
        try {
            if (type == ManualRiffle.class) {
                return Objects.requireNonNull(holder(extensionContext, "manual", true).manual);
            }
            Held held = holder(extensionContext, "engine", false);
            return type == Riffle.class ? held.kit.riffle() : held.kit;
        } catch (RuntimeException | AssertionError e) {
            throw new ParameterResolutionException("could not start a Riffle engine for " + parameter + " of "
                    + extensionContext.getDisplayName() + ": " + e.getMessage(), e);
        }
    }

    // getOrComputeIfAbsent: present on Jupiter 5.10 as on 6 (see RiffleDatabaseExtension).
    @SuppressWarnings("deprecation")
    private static Held holder(ExtensionContext context, String what, boolean manual) {
        // Keyed by the context's unique id, so a method never picks up an engine of its class context (store lookups
        // fall through to parents) and each @Nested class gets its own, on its own schema.
        String key = what + ":" + context.getUniqueId();
        return context.getStore(NAMESPACE).getOrComputeIfAbsent(key, k -> start(context, manual), Held.class);
    }

    private static Held start(ExtensionContext context, boolean manual) {
        TestDatabase db = RiffleDatabaseExtension.testDatabaseFor(context);
        Consumer<RiffleConfig.Builder> configure = configurer(context);
        if (manual) {
            ManualRiffle m = RiffleTestKit.manual(db, configure);
            return new Held(m.kit(), m);
        }
        return new Held(RiffleTestKit.of(RiffleTestKit.startEngine(db, configure)), null);
    }

    /** Every test instance implementing {@link RiffleTestConfig}, outermost first. */
    private static Consumer<RiffleConfig.Builder> configurer(ExtensionContext context) {
        Class<?> testClass = context.getRequiredTestClass();
        List<Object> instances = context.getTestInstances().map(TestInstances::getAllInstances).orElse(List.of());
        boolean wanted = false;
        for (Class<?> c = testClass; c != null; c = c.getEnclosingClass()) {
            wanted |= RiffleTestConfig.class.isAssignableFrom(c);
        }
        if (wanted && instances.isEmpty()) {
            throw new ParameterResolutionException(testClass.getName() + " implements RiffleTestConfig, but there is no"
                    + " test instance yet to call it on (a static @BeforeAll method?); use @TestInstance(PER_CLASS) or"
                    + " inject the engine into test methods");
        }
        return builder -> {
            for (Object instance : instances) {
                if (instance instanceof RiffleTestConfig config) {
                    config.configure(builder);
                }
            }
        };
    }

    /** The engine of one context, closed with it. */
    @SuppressWarnings("deprecation") // CloseableResource: the 5.10 way; 6 also closes it (AutoCloseable), once.
    static final class Held implements ExtensionContext.Store.CloseableResource, AutoCloseable {
        final RiffleTestKit kit;
        final @Nullable ManualRiffle manual;
        private final AtomicBoolean closed = new AtomicBoolean();

        Held(RiffleTestKit kit, @Nullable ManualRiffle manual) {
            this.kit = kit;
            this.manual = manual;
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            log.debug("closing the test engine on schema {}", kit.riffle().config().schema());
            kit.stopBackground();
            kit.riffle().close().block(RiffleTestKit.DEFAULT_TIMEOUT);
        }
    }
}
