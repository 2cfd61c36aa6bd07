package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.NewJob;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/** {@code @RiffleTest} injects started engines on the class's schema, configured by {@link RiffleTestConfig}. */
@RiffleTest
class RiffleEngineInjectionIT implements RiffleTestConfig {

    private static final List<Riffle> SEEN = new CopyOnWriteArrayList<>();
    private Riffle fromBeforeEach;

    @Override
    public void configure(RiffleConfig.Builder builder) {
        builder.maxClaimBatch(7).applicationName("injection-it");
    }

    @BeforeEach
    void before(Riffle riffle) {
        fromBeforeEach = riffle;
    }

    @AfterAll
    static void everyInjectedEngineWasClosedAfterItsTest() {
        assertThat(SEEN).hasSizeGreaterThanOrEqualTo(2).allSatisfy(r -> assertThat(r.isDisposed()).isTrue());
    }

    @Test
    void startedOnTheClassSchemaWithTheClassConfiguration(Riffle riffle, RiffleTestKit kit, TestDatabase db) {
        SEEN.add(riffle);
        assertThat(riffle.isDisposed()).isFalse();
        assertThat(riffle.config().schema()).isEqualTo(db.schema());
        assertThat(riffle.config().migrate()).isFalse();
        assertThat(riffle.config().maxClaimBatch()).isEqualTo(7);
        assertThat(riffle.config().applicationName()).isEqualTo("injection-it");
        assertThat(riffle.stats().listening()).isTrue();
        // One engine per test: @BeforeEach, the Riffle and the kit parameter share it.
        assertThat(kit.riffle()).isSameAs(riffle).isSameAs(fromBeforeEach);

        long id = kit.enqueue(NewJob.builder("hello").build()).block();
        assertThat(kit.drain(Map.of("hello", job -> Mono.empty()), "default").block())
                .extracting(r -> r.jobId()).containsExactly(id);
        assertThat(db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'injection-it%'"))
                .isPositive();
    }

    @Test
    void eachTestGetsAnEngineOfItsOwn(Riffle riffle) {
        SEEN.add(riffle);
        assertThat(SEEN.stream().filter(r -> r == riffle)).hasSize(1);
    }

    @Test
    void aManualEngineIsASecondEngine(Riffle riffle, ManualRiffle manual) {
        SEEN.add(riffle);
        SEEN.add(manual.riffle());
        assertThat(manual.riffle()).isNotSameAs(riffle);
        assertThat(manual.riffle().config().maintenance().enabled()).isFalse();
        assertThat(manual.riffle().config().clock()).isSameAs(manual.clock());
        // The class's configuration applies to the manual engine too.
        assertThat(manual.riffle().config().maxClaimBatch()).isEqualTo(7);
    }

    @Nested
    class Inner implements RiffleTestConfig {
        @Override
        public void configure(RiffleConfig.Builder builder) {
            builder.completionBatchSize(33);
        }

        @Test
        void nestedClassesRunOnTheirOwnSchemaAndStackConfigurations(Riffle riffle, TestDatabase db) {
            SEEN.add(riffle);
            assertThat(riffle.config().schema()).isEqualTo(db.schema());
            assertThat(riffle.config().maxClaimBatch()).isEqualTo(7);
            assertThat(riffle.config().completionBatchSize()).isEqualTo(33);
        }
    }
}
