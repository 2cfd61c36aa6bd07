package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.migrations.RiffleMigrations;
import java.lang.reflect.AnnotatedElement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives every test class its own migrated Riffle schema and resolves {@link TestDatabase} parameters. Usually applied
 * through {@link RiffleTest}.
 *
 * <p>The schema is created lazily on first need, normally in {@link #beforeAll}, but earlier when a
 * {@code @TestInstance(PER_CLASS)} constructor asks for a {@link TestDatabase} (JUnit builds such instances before
 * before-all callbacks run). It is dropped with {@code CASCADE} in {@link #afterAll} unless {@value #KEEP_SCHEMA_ENV} is
 * {@code 1} or {@code true}, which helps inspect what a failing test left behind. Schemas of test JVMs that were killed
 * are not cleaned up; they are named {@code rt_*} so they are easy to find.
 *
 * <p>Safe under JUnit's parallel execution: each class context computes its schema at most once.
 */
public final class RiffleDatabaseExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {

    /** Environment variable that keeps schemas after the tests, for post-mortem inspection. */
    public static final String KEEP_SCHEMA_ENV = "RIFFLE_TEST_KEEP_SCHEMA";

    /** Prefix of every schema this extension creates. */
    public static final String SCHEMA_PREFIX = "rt_";

    private static final Logger log = LoggerFactory.getLogger(RiffleDatabaseExtension.class);
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(RiffleDatabaseExtension.class);
    private static final int MAX_IDENTIFIER_LENGTH = 63;
    private static final int SUFFIX_LENGTH = 6;
    private static final String SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

    /** Created by JUnit. */
    public RiffleDatabaseExtension() {}

    @Override
    public void beforeAll(ExtensionContext context) {
        testDatabase(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        TestDatabase db = context.getStore(NAMESPACE).remove(key(context), TestDatabase.class);
        if (db == null) {
            return;
        }
        if (keepSchema(System.getenv())) {
            log.info("Keeping test schema {} on {} ({} is set)", db.schema(), db.url().r2dbcUrl(), KEEP_SCHEMA_ENV);
            return;
        }
        dropSchema(db.url(), db.schema());
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == TestDatabase.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return testDatabaseFor(extensionContext);
    }

    /** The schema of the test class {@code context} belongs to (created on first need); for the engine extension. */
    static TestDatabase testDatabaseFor(ExtensionContext context) {
        ExtensionContext classContext = classContext(context).orElseThrow(() -> new ParameterResolutionException(
                "TestDatabase can only be injected within a test class, not into " + context.getDisplayName()));
        return testDatabase(classContext);
    }

    // getOrComputeIfAbsent, not computeIfAbsent: the kit runs on Jupiter 5.10+ as well as 6, and computeIfAbsent only
    // exists from 6.0 on (NoSuchMethodError on 5.x). Deprecated in 6 but present; the value is never null, where the two
    // differ.
    @SuppressWarnings("deprecation")
    private static TestDatabase testDatabase(ExtensionContext classContext) {
        // Keyed by the context's unique id: store lookups fall through to parent contexts, so a constant key would make
        // a @Nested class silently reuse its enclosing class's schema.
        return classContext.getStore(NAMESPACE)
                .getOrComputeIfAbsent(key(classContext), k -> createSchema(classContext), TestDatabase.class);
    }

    private static String key(ExtensionContext classContext) {
        return "schema:" + classContext.getUniqueId();
    }

    /** The nearest enclosing context that stands for a test class (methods, templates and dynamic tests sit below it). */
    private static Optional<ExtensionContext> classContext(ExtensionContext context) {
        ExtensionContext c = context;
        while (true) {
            AnnotatedElement element = c.getElement().orElse(null);
            if (element instanceof Class<?>) {
                return Optional.of(c);
            }
            Optional<ExtensionContext> parent = c.getParent();
            if (parent.isEmpty()) {
                return Optional.empty();
            }
            c = parent.get();
        }
    }

    private static TestDatabase createSchema(ExtensionContext classContext) {
        Class<?> testClass = classContext.getRequiredTestClass();
        DatabaseUrl url = DatabaseLocator.locate().url();
        String schema = freshSchemaName(url, testClass);
        RiffleMigrations.Settings settings = settingsFor(testClass, schema);
        long t0 = System.nanoTime();
        try {
            RiffleMigrations.Result result = RiffleMigrations.migrate(Jdbc.jdbcUrl(url), url.user(), url.password(), settings);
            log.debug("Test schema {} for {} migrated to version {} ({} migrations) in {} ms", schema,
                    testClass.getName(), result.targetVersion(), result.migrationsExecuted(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        } catch (RuntimeException e) {
            // The value never reaches the store, so afterAll would not know about a half-migrated schema.
            dropSchema(url, schema);
            throw new ExtensionConfigurationException("migrating test schema " + schema + " on " + url.r2dbcUrl()
                    + " failed: " + e.getMessage(), e);
        }
        return new TestDatabase(url, settings);
    }

    /** Slot counts from the nearest {@link RiffleTest}, looking outwards through enclosing classes for @Nested ones. */
    static RiffleMigrations.Settings settingsFor(Class<?> testClass, String schema) {
        for (Class<?> c = testClass; c != null; c = c.getEnclosingClass()) {
            Optional<RiffleTest> annotation = AnnotationSupport.findAnnotation(c, RiffleTest.class);
            if (annotation.isPresent()) {
                RiffleTest a = annotation.get();
                return new RiffleMigrations.Settings(schema, a.queueSlots(), a.leaseSlots(), a.claimSlots());
            }
        }
        return RiffleMigrations.Settings.of(schema);
    }

    private static String freshSchemaName(DatabaseUrl url, Class<?> testClass) {
        try (Connection c = Jdbc.connect(url);
                PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
            // Collisions are a 1 in 2 billion event per pair, but a kept schema from an earlier run must never be reused.
            for (int attempt = 0; attempt < 5; attempt++) {
                String name = schemaName(testClass, randomSuffix());
                ps.setString(1, name);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return name;
                    }
                }
            }
            throw new ExtensionConfigurationException("could not find an unused schema name for " + testClass.getName());
        } catch (SQLException e) {
            throw new ExtensionConfigurationException("cannot connect to the test database " + url.r2dbcUrl() + ": "
                    + e.getMessage(), e);
        }
    }

    /**
     * {@code rt_<class name in snake case>_<suffix>}, cut to PostgreSQL's 63-byte identifier limit; readable so a kept
     * schema can be traced back to its test class.
     */
    static String schemaName(Class<?> testClass, String suffix) {
        String simple = testClass.getSimpleName().isEmpty() ? "anonymous" : testClass.getSimpleName();
        String snake = simple
                .replaceAll("([a-z0-9])([A-Z])", "$1_$2")
                .replaceAll("([A-Z]+)([A-Z][a-z])", "$1_$2")
                .toLowerCase(Locale.ROOT)
                .replaceAll("[^a-z0-9_]", "_")
                .replaceAll("_+", "_")
                .replaceAll("^_|_$", "");
        int room = MAX_IDENTIFIER_LENGTH - SCHEMA_PREFIX.length() - 1 - suffix.length();
        if (snake.length() > room) {
            snake = snake.substring(0, room).replaceAll("_+$", "");
        }
        String name = SCHEMA_PREFIX + (snake.isEmpty() ? "" : snake + "_") + suffix;
        return RiffleMigrations.validateSchemaName(name);
    }

    private static String randomSuffix() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        StringBuilder sb = new StringBuilder(SUFFIX_LENGTH);
        for (int i = 0; i < SUFFIX_LENGTH; i++) {
            sb.append(SUFFIX_ALPHABET.charAt(random.nextInt(SUFFIX_ALPHABET.length())));
        }
        return sb.toString();
    }

    /** Whether {@value #KEEP_SCHEMA_ENV} asks to keep schemas ({@code 1} or {@code true}). */
    static boolean keepSchema(Map<String, String> env) {
        String value = env.get(KEEP_SCHEMA_ENV);
        return value != null && (value.strip().equals("1") || value.strip().equalsIgnoreCase("true"));
    }

    private static void dropSchema(DatabaseUrl url, String schema) {
        try (Connection c = Jdbc.connect(url); Statement st = c.createStatement()) {
            // A test that leaked an open transaction would otherwise make DROP wait forever on its locks.
            st.execute("SET lock_timeout = '10s'");
            st.execute("DROP SCHEMA IF EXISTS " + Jdbc.quote(schema) + " CASCADE");
        } catch (SQLException e) {
            // Teardown must not mask the tests' own outcome; the schema name makes the leftover easy to remove by hand.
            log.warn("Could not drop test schema {} on {}: {}", schema, url.r2dbcUrl(), e.getMessage());
        }
    }
}
