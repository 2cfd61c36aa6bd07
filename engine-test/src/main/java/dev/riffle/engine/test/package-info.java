/**
 * JUnit test kit for Riffle: finds a PostgreSQL server (or starts one), gives each test class its own migrated
 * schema, and offers blocking JDBC helpers for assertions.
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
 * <p>The server is found by {@link dev.riffle.engine.test.DatabaseLocator} (environment variable, local server,
 * Testcontainers, embedded). {@link dev.riffle.engine.test.EmbeddedPostgresServer} can also be used on its own, e.g. by
 * demos that must run on a machine without any PostgreSQL.
 */
@NullMarked
package dev.riffle.engine.test;

import org.jspecify.annotations.NullMarked;
