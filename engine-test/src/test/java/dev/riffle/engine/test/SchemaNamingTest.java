package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.migrations.RiffleMigrations;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Naming and settings rules of {@link RiffleDatabaseExtension} that need no database. */
class SchemaNamingTest {

    @Test
    void camelCaseBecomesSnakeCase() {
        assertThat(RiffleDatabaseExtension.schemaName(JDBCHelperIT.class, "abc123")).isEqualTo("rt_jdbc_helper_it_abc123");
        assertThat(RiffleDatabaseExtension.schemaName(Queue2Test.class, "zzzzzz")).isEqualTo("rt_queue2_test_zzzzzz");
    }

    @Test
    void longNamesAreCutToTheIdentifierLimit() {
        String name = RiffleDatabaseExtension.schemaName(
                AnExtraordinarilyLongTestClassNameThatKeepsGoingWellPastWhatPostgresAllowsInOneIdentifierTest.class,
                "q1w2e3");

        assertThat(name).hasSizeLessThanOrEqualTo(63).startsWith("rt_an_extraordinarily_long").endsWith("_q1w2e3")
                .doesNotContain("__");
        assertThat(RiffleMigrations.validateSchemaName(name)).isEqualTo(name);
    }

    @Test
    void anonymousClassesStillGetAValidName() {
        Object anonymous = new Object() {};
        assertThat(RiffleDatabaseExtension.schemaName(anonymous.getClass(), "aaaaaa")).isEqualTo("rt_anonymous_aaaaaa");
    }

    @Test
    void settingsComeFromTheNearestAnnotation() {
        assertThat(RiffleDatabaseExtension.settingsFor(Annotated.Inner.class, "s"))
                .isEqualTo(new RiffleMigrations.Settings("s", 6, 3, 5));
        assertThat(RiffleDatabaseExtension.settingsFor(Queue2Test.class, "s")).isEqualTo(RiffleMigrations.Settings.of("s"));
    }

    @Test
    void keepSchemaSwitch() {
        assertThat(RiffleDatabaseExtension.keepSchema(Map.of())).isFalse();
        assertThat(RiffleDatabaseExtension.keepSchema(Map.of(RiffleDatabaseExtension.KEEP_SCHEMA_ENV, "1"))).isTrue();
        assertThat(RiffleDatabaseExtension.keepSchema(Map.of(RiffleDatabaseExtension.KEEP_SCHEMA_ENV, "true"))).isTrue();
        assertThat(RiffleDatabaseExtension.keepSchema(Map.of(RiffleDatabaseExtension.KEEP_SCHEMA_ENV, "0"))).isFalse();
    }

    private static final class JDBCHelperIT {}

    private static final class Queue2Test {}

    private static final class AnExtraordinarilyLongTestClassNameThatKeepsGoingWellPastWhatPostgresAllowsInOneIdentifierTest {}

    @RiffleTest(queueSlots = 6, leaseSlots = 3, claimSlots = 5)
    private static final class Annotated {
        private static final class Inner {}
    }
}
