package dev.riffle.engine.test;

import dev.riffle.engine.RiffleConfig;

/**
 * Implemented by a {@link RiffleTest} class to adjust the engines injected into it ({@link dev.riffle.engine.Riffle},
 * {@link RiffleTestKit} and {@link ManualRiffle} parameters).
 *
 * <pre>{@code
 * @RiffleTest
 * class RetryTest implements RiffleTestConfig {
 *     @Override
 *     public void configure(RiffleConfig.Builder builder) {
 *         builder.queue(QueueConfig.of("mail").withDlq(true)).maxClaimBatch(16);
 *     }
 *
 *     @Test
 *     void retries(Riffle riffle) { ... }
 * }
 * }</pre>
 *
 * <p>The builder arrives prepared by {@link RiffleTestKit#testDefaults(TestDatabase)} (the class's URL and schema,
 * {@code migrate(false)}, test-sized pool and maintenance timings). Keep the URL and schema: the schema is the one
 * {@link RiffleTest} migrated. For a {@link ManualRiffle} the maintenance loops are turned off and the clock replaced
 * after this method ran. {@code @Nested} classes: every enclosing test instance that implements this interface is
 * asked, outermost first, then the nested one. Called on the test instance, so an engine injected into a static
 * {@code @BeforeAll} method of a class that implements this needs {@code @TestInstance(PER_CLASS)}.
 */
@FunctionalInterface
public interface RiffleTestConfig {

    /** Adjusts the configuration of an engine about to be started for this test class. */
    void configure(RiffleConfig.Builder builder);
}
