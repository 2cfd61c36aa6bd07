package dev.riffle.engine.test;

import dev.riffle.migrations.RiffleMigrations;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class against its own freshly migrated Riffle schema.
 *
 * <p>Before the class's tests, {@link RiffleDatabaseExtension} finds a server with {@link DatabaseLocator}, creates a
 * uniquely named schema, and migrates it with {@link RiffleMigrations}; after them it drops the schema. Declare a
 * {@link TestDatabase} parameter to get at it. {@code @Nested} classes get a schema of their own, migrated with the
 * settings of the nearest annotated class.
 *
 * <p>{@link RiffleEngineExtension} injects started engines on that schema: declare a {@link dev.riffle.engine.Riffle}
 * or {@link RiffleTestKit} parameter (closed after the test), or a {@link ManualRiffle} for an engine whose maintenance
 * runs only when the test says so. Implement {@link RiffleTestConfig} to adjust their configuration.
 *
 * <p>{@link SchedulerErrorGuard} fails a test during which an exception escaped onto a Reactor scheduler.
 *
 * <p>The slot counts are install-time settings of the schema; tests that exercise ring rotation can shrink them to make
 * it happen sooner.
 */
@Target({ElementType.TYPE, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(RiffleDatabaseExtension.class)
@ExtendWith(RiffleEngineExtension.class)
@ExtendWith(SchedulerErrorGuard.class)
public @interface RiffleTest {

    /** Queue-ring partitions (4..64). */
    int queueSlots() default RiffleMigrations.DEFAULT_QUEUE_SLOTS;

    /** Lease-ring partitions (2..64). */
    int leaseSlots() default RiffleMigrations.DEFAULT_LEASE_SLOTS;

    /** Claim-ring partitions (2..64). */
    int claimSlots() default RiffleMigrations.DEFAULT_CLAIM_SLOTS;
}
