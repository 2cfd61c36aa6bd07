/**
 * JUnit test kit for Riffle: finds a PostgreSQL server (or starts one), gives each test class its own migrated
 * schema, injects started engines ({@link dev.riffle.engine.test.RiffleEngineExtension}), and offers reactive
 * drain/await helpers ({@link dev.riffle.engine.test.RiffleTestKit}), a manual maintenance mode with a settable clock
 * ({@link dev.riffle.engine.test.ManualRiffle}, {@link dev.riffle.engine.test.TestClock}), queue assertions
 * ({@link dev.riffle.engine.test.RiffleAssertions}) and blocking JDBC helpers (docs/testing.md).
 *
 * <p>Typical use:
 * <pre>{@code
 * @RiffleTest
 * class MyQueueTest {
 *     @Test
 *     void enqueues(TestDatabase db) {
 *         // ... run the engine against db.url() / db.schema() ...
 *         assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history")).isPositive();
 *     }
 * }
 * }</pre>
 *
 * <p>The server is found by {@link dev.riffle.engine.test.DatabaseLocator} (system property or environment variable,
 * local server unless {@code riffle.test.probe-local=false}, Testcontainers, embedded). {@link dev.riffle.engine.test.EmbeddedPostgresServer} can also be used on its own, e.g. by
 * demos that must run on a machine without any PostgreSQL.
 */
@NullMarked
package dev.riffle.engine.test;

import org.jspecify.annotations.NullMarked;
