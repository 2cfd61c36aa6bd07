package dev.riffle.engine;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.nameStartingWith;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

class ArchitectureTest {

    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses() {
        main = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
                .importPackages("dev.riffle.engine");
    }

    @Test
    void importSawTheEngine() {
        // Guards the rules below against passing vacuously on an empty import.
        assertThat(main.contain(Riffle.class)).isTrue();
        assertThat(main.contain(dev.riffle.engine.api.NewJob.class)).isTrue();
        assertThat(main.contain(dev.riffle.engine.internal.sql.Db.class)).isTrue();
        assertThat(main.contain(ArchitectureTest.class)).isFalse();
    }

    static final ArchRule API_IS_SELF_CONTAINED = noClasses()
            .that().resideInAPackage("dev.riffle.engine.api..")
            .should().dependOnClassesThat().resideInAPackage("dev.riffle.engine.internal..")
            .because("the public API must not leak engine internals to users");

    static final ArchRule API_NAMES_ONLY_THE_SPI = noClasses()
            .that().resideInAPackage("dev.riffle.engine.api..")
            .should().dependOnClassesThat().resideInAnyPackage("io.r2dbc.postgresql..", "io.r2dbc.pool..",
                    "io.micrometer..", "org.flywaydb..", "org.slf4j..")
            .because("API types may name the R2DBC SPI (transactional enqueue takes the caller's Connection) but "
                    + "no driver, pool, logging or optional library");

    private static final DescribedPredicate<JavaClass> MONO_OR_FLUX = DescribedPredicate.describe("Mono or Flux",
            c -> c.isAssignableTo(Mono.class) || c.isAssignableTo(Flux.class));

    static final ArchRule NO_BLOCKING_REACTOR_CALLS = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .should().callMethodWhere(target(owner(MONO_OR_FLUX)).and(target(nameStartingWith("block"))))
            .because("the engine runs on event-loop threads; blocking there stalls every subscription");

    static final ArchRule NO_SLEEPING = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .should().callMethod(Thread.class, "sleep", long.class)
            .orShould().callMethod(Thread.class, "sleep", long.class, int.class)
            .orShould().callMethod(Thread.class, "sleep", java.time.Duration.class)
            .because("waiting is done with reactor timers, never by parking a thread");

    static final ArchRule NO_JDBC = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .should().dependOnClassesThat().resideInAPackage("java.sql..")
            .because("JDBC (Flyway) lives in the migrations module; the engine speaks R2DBC only");

    static final ArchRule MICROMETER_STAYS_IN_ITS_BINDING = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.internal.metrics.MicrometerBinding")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.internal.tracing.ObservationTracing")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.RiffleConfig$Builder")
            .should().dependOnClassesThat().resideInAPackage("io.micrometer..")
            .because("micrometer-core and micrometer-observation are optional: only the lazily loaded bindings may "
                    + "touch them");

    /**
     * The builder may name {@code MeterRegistry} and {@code ObservationRegistry}, and only as the parameters of
     * {@code meterRegistry(...)} and {@code observationRegistry(...)}.
     */
    static final ArchRule BUILDER_NAMES_MICROMETER_ONLY_IN_ITS_SETTER = classes()
            .that().haveFullyQualifiedName("dev.riffle.engine.RiffleConfig$Builder")
            .should(new com.tngtech.archunit.lang.ArchCondition<JavaClass>("touch Micrometer only in its setters' parameters") {
                @Override
                public void check(JavaClass c, com.tngtech.archunit.lang.ConditionEvents events) {
                    for (com.tngtech.archunit.core.domain.Dependency d : c.getDirectDependenciesFromSelf()) {
                        if (d.getTargetClass().getPackageName().startsWith("io.micrometer")
                                && !d.getDescription().matches("Method <[^>]*\\.(meter|observation)Registry\\([^>]*> has parameter of type .*")) {
                            events.add(com.tngtech.archunit.lang.SimpleConditionEvent.violated(c, d.getDescription()));
                        }
                    }
                }
            });

    // API_NAMES_ONLY_THE_SPI does not list Jackson: the api package needs it, but only inside the package-private
    // check (it cannot live in internal, which api may not use). This rule keeps it there, so JSON is judged in one
    // place on the client and Jackson never becomes part of a signature users compile against.
    static final ArchRule JACKSON_STAYS_IN_THE_JSON_CHECK = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.api.JsonObjectCheck")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.internal.tracing.TraceCarrier")
            .should().dependOnClassesThat().resideInAPackage("tools.jackson..")
            .because("JSON is checked once on the client (docs/adr/0008-json-judged-once.md); the database judges "
                    + "the rest. The one other reader is the engine's own trace carrier in the job's payload "
                    + "(docs/tracing.md), which judges no user JSON");

    static final ArchRule INTERNAL_IS_NOT_PUBLIC_API = classes()
            .that().resideInAPackage("dev.riffle.engine.api..")
            .should().onlyDependOnClassesThat().resideOutsideOfPackage("dev.riffle.engine.internal..");

    /** A public member of the public surface (facade and api) names an internal type in its signature. */
    private static final com.tngtech.archunit.lang.ArchCondition<com.tngtech.archunit.core.domain.JavaCodeUnit>
            NAME_NO_INTERNAL_TYPE = new com.tngtech.archunit.lang.ArchCondition<>("name no internal type in their signature") {
                @Override
                public void check(com.tngtech.archunit.core.domain.JavaCodeUnit unit,
                                  com.tngtech.archunit.lang.ConditionEvents events) {
                    java.util.List<com.tngtech.archunit.core.domain.JavaClass> types = new java.util.ArrayList<>(unit.getRawParameterTypes());
                    types.add(unit.getRawReturnType());
                    for (com.tngtech.archunit.core.domain.JavaClass t : types) {
                        if (t.getPackageName().startsWith("dev.riffle.engine.internal")) {
                            events.add(com.tngtech.archunit.lang.SimpleConditionEvent.violated(unit,
                                    unit.getFullName() + " exposes " + t.getName()));
                        }
                    }
                }
            };

    static final ArchRule PUBLIC_SURFACE_HIDES_INTERNALS = com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits()
            .that().arePublic()
            .and().areDeclaredInClassesThat().arePublic()
            .and().areDeclaredInClassesThat().resideInAnyPackage("dev.riffle.engine", "dev.riffle.engine.api")
            .should(NAME_NO_INTERNAL_TYPE)
            .allowEmptyShould(false);

    static final ArchRule MECHANISM_PACKAGES_ARE_ACYCLIC = com.tngtech.archunit.library.dependencies.SlicesRuleDefinition
            .slices().matching("dev.riffle.engine.internal.(*)..")
            .should().beFreeOfCycles()
            .because("one mechanism, one package: claim, close and lease meet only in the attempt package's interfaces");

    static final ArchRule MACHINERY_DOES_NOT_USE_THE_FACADE = noClasses()
            .that().resideInAPackage("dev.riffle.engine.internal..")
            .should().dependOnClassesThat().resideInAPackage("dev.riffle.engine")
            .because("the facade wires the machinery; the machinery must not reach back into it");

    static final ArchRule ONE_CLOCK = noClasses()
            .that().resideInAPackage("dev.riffle.engine..")
            .and().doNotHaveFullyQualifiedName("dev.riffle.engine.internal.time.EngineClock")
            .should().callMethod(System.class, "nanoTime")
            .orShould().callMethod(System.class, "currentTimeMillis")
            .orShould().callMethod(java.time.Instant.class, "now")
            .because("local time comes from the one injectable clock (RiffleConfig.clock(), read through EngineClock), "
                    + "so tests can drive it in virtual time");

    @Test
    void mechanismPackagesAreAcyclic() {
        MECHANISM_PACKAGES_ARE_ACYCLIC.check(main);
    }

    @Test
    void machineryDoesNotUseTheFacade() {
        MACHINERY_DOES_NOT_USE_THE_FACADE.check(main);
    }

    @Test
    void oneClock() {
        ONE_CLOCK.check(main);
    }

    @Test
    void publicSurfaceHidesInternals() {
        PUBLIC_SURFACE_HIDES_INTERNALS.check(main);
    }

    @Test
    void apiDoesNotDependOnInternals() {
        API_IS_SELF_CONTAINED.check(main);
        INTERNAL_IS_NOT_PUBLIC_API.check(main);
    }

    @Test
    void apiNamesOnlyTheR2dbcSpi() {
        API_NAMES_ONLY_THE_SPI.check(main);
    }

    @Test
    void jacksonIsConfinedToTheJsonCheck() {
        JACKSON_STAYS_IN_THE_JSON_CHECK.check(main);
    }

    @Test
    void noBlockingReactorCalls() {
        NO_BLOCKING_REACTOR_CALLS.check(main);
    }

    @Test
    void noThreadSleep() {
        NO_SLEEPING.check(main);
    }

    @Test
    void noJdbc() {
        NO_JDBC.check(main);
    }

    @Test
    void micrometerIsConfinedToItsBinding() {
        MICROMETER_STAYS_IN_ITS_BINDING.check(main);
        BUILDER_NAMES_MICROMETER_ONLY_IN_ITS_SETTER.check(main);
    }

    @Test
    void rulesCatchViolations() {
        // Each rule must be able to fail: run it against test classes that break it on purpose.
        JavaClasses bad = new ClassFileImporter().importClasses(Offenders.Blocker.class, Offenders.Sleeper.class,
                Offenders.JdbcUser.class, Offenders.MeterUser.class, Offenders.InternalLeaker.class,
                Offenders.JsonParserUser.class,
                Offenders.OwnClock.class, dev.riffle.engine.api.LeakyApiOffender.class,
                dev.riffle.engine.internal.offenderone.CycleStart.class,
                dev.riffle.engine.internal.offendertwo.CycleEnd.class);
        assertThatThrownBy(() -> MECHANISM_PACKAGES_ARE_ACYCLIC.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("offenderone").hasMessageContaining("offendertwo");
        assertThatThrownBy(() -> MACHINERY_DOES_NOT_USE_THE_FACADE.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("RiffleStats");
        assertThatThrownBy(() -> ONE_CLOCK.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("System.nanoTime()").hasMessageContaining("Instant.now()");
        assertThatThrownBy(() -> PUBLIC_SURFACE_HIDES_INTERNALS.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("InternalLeaker.catalog()").hasMessageContaining("SqlCatalog");
        assertThatThrownBy(() -> NO_BLOCKING_REACTOR_CALLS.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("Mono.block()").hasMessageContaining("Flux.blockLast(");
        assertThatThrownBy(() -> NO_SLEEPING.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("Thread.sleep(");
        assertThatThrownBy(() -> NO_JDBC.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("java.sql.Connection");
        assertThatThrownBy(() -> MICROMETER_STAYS_IN_ITS_BINDING.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("io.micrometer");
        assertThatThrownBy(() -> JACKSON_STAYS_IN_THE_JSON_CHECK.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("JsonParserUser").hasMessageContaining("tools.jackson");
        assertThatThrownBy(() -> API_IS_SELF_CONTAINED.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("LeakyApiOffender");
        assertThatThrownBy(() -> INTERNAL_IS_NOT_PUBLIC_API.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("SqlCatalog");
        assertThatThrownBy(() -> API_NAMES_ONLY_THE_SPI.check(bad)).isInstanceOf(AssertionError.class)
                .hasMessageContaining("io.r2dbc.pool");
    }
}
