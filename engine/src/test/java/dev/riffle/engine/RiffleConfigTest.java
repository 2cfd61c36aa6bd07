package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.QueueConfig;
import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class RiffleConfigTest {

    private static RiffleConfig.Builder base() {
        return RiffleConfig.builder().url("postgres://db/app");
    }

    @Test
    void documentedDefaultValues() {
        assertThat(RiffleConfig.DEFAULT_SCHEMA).isEqualTo("riffle");
        assertThat(RiffleConfig.DEFAULT_POOL_SIZE).isEqualTo(10);
        assertThat(RiffleConfig.DEFAULT_MAX_CLAIM_BATCH).isEqualTo(512);
        assertThat(RiffleConfig.DEFAULT_COMPLETION_BATCH_SIZE).isEqualTo(512);
        assertThat(RiffleConfig.DEFAULT_COMPLETION_WINDOW).isEqualTo(Duration.ofMillis(1));
        assertThat(RiffleConfig.DEFAULT_COMPLETION_FLUSH_CONCURRENCY).isEqualTo(4);
        assertThat(RiffleConfig.DEFAULT_POLL_INTERVAL).isEqualTo(Duration.ofMillis(200));
        assertThat(RiffleConfig.DEFAULT_SAFETY_POLL_INTERVAL).isEqualTo(Duration.ofSeconds(5));
        assertThat(RiffleConfig.DEFAULT_BUSY_RETRY_DELAY).isEqualTo(Duration.ofMillis(2));
        assertThat(RiffleConfig.DEFAULT_CLAIM_LINGER).isEqualTo(Duration.ofMillis(2));
        assertThat(RiffleConfig.DEFAULT_CURSOR_ADVANCE_DELAY).isEqualTo(Duration.ofMillis(20));
        assertThat(RiffleConfig.DEFAULT_MAX_ARGS_BYTES).isEqualTo(256 * 1024);
    }

    @Test
    void builderStartsFromTheDefaults() {
        RiffleConfig c = base().build();

        assertThat(c.url()).isEqualTo(DatabaseUrl.parse("postgres://db/app"));
        assertThat(c.schema()).isEqualTo(RiffleConfig.DEFAULT_SCHEMA);
        assertThat(c.migrate()).isTrue();
        assertThat(c.poolSize()).isEqualTo(RiffleConfig.DEFAULT_POOL_SIZE);
        assertThat(c.applicationName()).isEqualTo("riffle");
        assertThat(c.maxClaimBatch()).isEqualTo(RiffleConfig.DEFAULT_MAX_CLAIM_BATCH);
        assertThat(c.completionBatchSize()).isEqualTo(RiffleConfig.DEFAULT_COMPLETION_BATCH_SIZE);
        assertThat(c.completionWindow()).isEqualTo(RiffleConfig.DEFAULT_COMPLETION_WINDOW);
        assertThat(c.completionFlushConcurrency()).isEqualTo(RiffleConfig.DEFAULT_COMPLETION_FLUSH_CONCURRENCY);
        assertThat(c.pollInterval()).isEqualTo(RiffleConfig.DEFAULT_POLL_INTERVAL);
        assertThat(c.safetyPollInterval()).isEqualTo(RiffleConfig.DEFAULT_SAFETY_POLL_INTERVAL);
        assertThat(c.busyRetryDelay()).isEqualTo(RiffleConfig.DEFAULT_BUSY_RETRY_DELAY);
        assertThat(c.claimLinger()).isEqualTo(RiffleConfig.DEFAULT_CLAIM_LINGER);
        assertThat(c.cursorAdvanceDelay()).isEqualTo(RiffleConfig.DEFAULT_CURSOR_ADVANCE_DELAY);
        assertThat(c.maxArgsBytes()).isEqualTo(RiffleConfig.DEFAULT_MAX_ARGS_BYTES);
        assertThat(c.copyEnqueueThreshold()).isEqualTo(RiffleConfig.DEFAULT_COPY_ENQUEUE_THRESHOLD);
        assertThat(c.warmPool()).isEqualTo(RiffleConfig.DEFAULT_WARM_POOL).isTrue();
        assertThat(base().warmPool(false).build().warmPool()).isFalse();
        assertThat(c.queues()).isEmpty();
        assertThat(c.dlqByDefault()).isTrue();
        assertThat(c.maintenance()).isEqualTo(MaintenanceConfig.defaults());
        assertThat(c.meterRegistry()).isNull();
    }

    @Test
    void builderCarriesEverySetting() {
        MaintenanceConfig m = MaintenanceConfig.builder().enabled(false).build();
        io.micrometer.core.instrument.MeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        RiffleConfig c = base().schema("jobs_2").migrate(false).poolSize(3).applicationName("billing")
                .maxClaimBatch(7).completionBatchSize(8).completionWindow(Duration.ofMillis(9))
                .completionFlushConcurrency(4).pollInterval(Duration.ofMillis(11)).safetyPollInterval(Duration.ofMillis(12))
                .busyRetryDelay(Duration.ofMillis(13)).claimLinger(Duration.ofMillis(16))
                .cursorAdvanceDelay(Duration.ofMillis(14)).maxArgsBytes(15).copyEnqueueThreshold(17)
                .queue(QueueConfig.of("a")).dlqByDefault(false).maintenance(m).meterRegistry(registry).build();

        assertThat(c.schema()).isEqualTo("jobs_2");
        assertThat(c.migrate()).isFalse();
        assertThat(c.poolSize()).isEqualTo(3);
        assertThat(c.applicationName()).isEqualTo("billing");
        assertThat(c.maxClaimBatch()).isEqualTo(7);
        assertThat(c.completionBatchSize()).isEqualTo(8);
        assertThat(c.completionWindow()).isEqualTo(Duration.ofMillis(9));
        assertThat(c.completionFlushConcurrency()).isEqualTo(4);
        assertThat(c.pollInterval()).isEqualTo(Duration.ofMillis(11));
        assertThat(c.safetyPollInterval()).isEqualTo(Duration.ofMillis(12));
        assertThat(c.busyRetryDelay()).isEqualTo(Duration.ofMillis(13));
        assertThat(c.claimLinger()).isEqualTo(Duration.ofMillis(16));
        assertThat(c.cursorAdvanceDelay()).isEqualTo(Duration.ofMillis(14));
        assertThat(c.maxArgsBytes()).isEqualTo(15);
        assertThat(c.copyEnqueueThreshold()).isEqualTo(17);
        assertThat(c.queues()).isEqualTo(Map.of("a", QueueConfig.of("a")));
        assertThat(c.dlqByDefault()).isFalse();
        assertThat(c.maintenance()).isSameAs(m);
        assertThat(c.meterRegistry()).isSameAs(registry);
    }

    static Stream<Arguments> outOfRange() {
        return Stream.of(
                bad("poolSize", b -> b.poolSize(1)),
                bad("poolSize", b -> b.poolSize(1001)),
                bad("maxClaimBatch", b -> b.maxClaimBatch(0)),
                bad("maxClaimBatch", b -> b.maxClaimBatch(10_001)),
                bad("completionBatchSize", b -> b.completionBatchSize(0)),
                bad("completionBatchSize", b -> b.completionBatchSize(10_001)),
                bad("completionFlushConcurrency", b -> b.completionFlushConcurrency(0)),
                bad("completionFlushConcurrency", b -> b.completionFlushConcurrency(65)),
                bad("maxArgsBytes", b -> b.maxArgsBytes(1)),
                bad("maxArgsBytes", b -> b.maxArgsBytes(64 * 1024 * 1024 + 1)),
                bad("copyEnqueueThreshold", b -> b.copyEnqueueThreshold(-1)),
                bad("completionWindow", b -> b.completionWindow(Duration.ZERO)),
                bad("completionWindow", b -> b.completionWindow(Duration.ofMillis(-1))),
                bad("completionWindow", b -> b.completionWindow(null)),
                bad("pollInterval", b -> b.pollInterval(Duration.ZERO)),
                bad("safetyPollInterval", b -> b.safetyPollInterval(Duration.ofSeconds(-5))),
                bad("busyRetryDelay", b -> b.busyRetryDelay(Duration.ZERO)),
                bad("claimLinger", b -> b.claimLinger(Duration.ZERO)),
                bad("claimLinger", b -> b.claimLinger(Duration.ofMillis(-1))),
                bad("cursorAdvanceDelay", b -> b.cursorAdvanceDelay(Duration.ZERO)),
                bad("schema", b -> b.schema("Bad-Name")),
                bad("schema", b -> b.schema("9lives")),
                bad("schema", b -> b.schema("")),
                bad("schema", b -> b.schema("a\".b")),
                bad("schema", b -> b.schema("x".repeat(64))));
    }

    private static Arguments bad(String field, Consumer<RiffleConfig.Builder> change) {
        return Arguments.of(field, change);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("outOfRange")
    void rangeChecksNameTheField(String field, Consumer<RiffleConfig.Builder> change) {
        RiffleConfig.Builder b = base();
        change.accept(b);
        assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(field);
    }

    @Test
    void boundsAreInclusive() {
        RiffleConfig low = base().poolSize(2).maxClaimBatch(1).completionBatchSize(1).completionFlushConcurrency(1)
                .maxArgsBytes(2).completionWindow(Duration.ofNanos(1)).copyEnqueueThreshold(0).build();
        RiffleConfig high = base().poolSize(1000).maxClaimBatch(10_000).completionBatchSize(10_000)
                .completionFlushConcurrency(64).maxArgsBytes(64 * 1024 * 1024).copyEnqueueThreshold(Integer.MAX_VALUE)
                .build();
        assertThat(low.poolSize()).isEqualTo(2);
        assertThat(high.poolSize()).isEqualTo(1000);
    }

    @ParameterizedTest
    @ValueSource(strings = {"riffle", "_x", "jobs_2", "a"})
    void validSchemas(String schema) {
        assertThat(base().schema(schema).build().schema()).isEqualTo(schema);
    }

    private static io.r2dbc.postgresql.PostgresqlConnectionFactory postgres() {
        // Building a factory connects to nothing.
        return new io.r2dbc.postgresql.PostgresqlConnectionFactory(io.r2dbc.postgresql.PostgresqlConnectionConfiguration
                .builder().host("db").database("app").username("app").build());
    }

    private static io.r2dbc.pool.ConnectionPool pool(io.r2dbc.spi.ConnectionFactory f) {
        return new io.r2dbc.pool.ConnectionPool(io.r2dbc.pool.ConnectionPoolConfiguration.builder(f).initialSize(0).build());
    }

    @Test
    void neitherUrlNorConnectionFactoryIsAClearError() {
        assertThatThrownBy(() -> RiffleConfig.builder().build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a database is required: set url(...) or connectionFactory(...)");
    }

    @Test
    void urlAndConnectionFactoryTogetherAreAClearError() {
        assertThatThrownBy(() -> base().connectionFactory(postgres()).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("url and connectionFactory are both set: set exactly one");
    }

    @Test
    void aConnectionFactoryStandsInForTheUrl() {
        var pool = pool(postgres());
        try {
            RiffleConfig c = RiffleConfig.builder().connectionFactory(pool).migrate(false).build();
            assertThat(c.url()).isNull();
            assertThat(c.connectionFactory()).isSameAs(pool);
            assertThat(c.listenConnectionFactory()).isNull();
            assertThat(c.migrationUrl()).isNull();
            var listen = postgres();
            RiffleConfig explicit = RiffleConfig.builder().connectionFactory(pool).listenConnectionFactory(listen)
                    .migrationUrl("postgres://db/app").build();
            assertThat(explicit.listenConnectionFactory()).isSameAs(listen);
            assertThat(explicit.migrate()).isTrue();
            assertThat(explicit.migrationUrl()).isEqualTo(DatabaseUrl.parse("postgres://db/app"));
        } finally {
            pool.dispose();
        }
    }

    @Test
    void migrateWithAConnectionFactoryNeedsTheMigrationUrl() {
        // The default (migrate on) with a factory and nothing Flyway could connect to fails at build(), not at start.
        assertThatThrownBy(() -> RiffleConfig.builder().connectionFactory(postgres()).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("migrationUrl").hasMessageContaining("migrate(false)");
    }

    @Test
    void aListenFactoryWithoutAConnectionFactoryOrAPooledOneIsRefused() {
        assertThatThrownBy(() -> base().listenConnectionFactory(postgres()).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("listenConnectionFactory is only for");
        var pool = pool(postgres());
        try {
            assertThatThrownBy(() -> RiffleConfig.builder().connectionFactory(postgres()).migrate(false)
                    .listenConnectionFactory(pool).build())
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not pooled connections");
        } finally {
            pool.dispose();
        }
    }

    @Test
    void aFactoryOfAnotherDriverIsRefused() {
        io.r2dbc.spi.ConnectionFactory other = new io.r2dbc.spi.ConnectionFactory() {
            @Override
            public org.reactivestreams.Publisher<? extends io.r2dbc.spi.Connection> create() {
                return reactor.core.publisher.Mono.error(new UnsupportedOperationException());
            }

            @Override
            public io.r2dbc.spi.ConnectionFactoryMetadata getMetadata() {
                return () -> "H2";
            }
        };
        assertThatThrownBy(() -> RiffleConfig.builder().connectionFactory(other).migrate(false).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("connectionFactory must be a PostgreSQL factory").hasMessageContaining("'H2'");
    }

    @Test
    void aMeterRegistryOfTheWrongTypeNoLongerPassesBuild() {
        // The builder method is typed; the record's canonical constructor (the Object component) refuses it too.
        assertThatThrownBy(() -> withRegistries("not a registry", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("meterRegistry must be an io.micrometer.core.instrument.MeterRegistry");
    }

    @Test
    void anObservationRegistryOfTheWrongTypeNoLongerPassesBuild() {
        assertThatThrownBy(() -> withRegistries(null, "not a registry"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("observationRegistry must be an io.micrometer.observation.ObservationRegistry");
        assertThat(base().build().observationRegistry()).as("default: none").isNull();
    }

    private RiffleConfig withRegistries(Object meterRegistry, Object observationRegistry) {
        RiffleConfig ok = base().build();
        return new RiffleConfig(ok.url(), null, null, null, ok.schema(), ok.migrate(), ok.poolSize(),
                ok.applicationName(), ok.maxClaimBatch(), ok.completionBatchSize(), ok.completionWindow(),
                ok.completionFlushConcurrency(), ok.pollInterval(), ok.safetyPollInterval(), ok.busyRetryDelay(),
                ok.claimLinger(), ok.cursorAdvanceDelay(), ok.maxArgsBytes(), ok.copyEnqueueThreshold(), ok.workPendingOutcomes(),
                ok.workPrefetch(), ok.claimConcurrency(), ok.queues(), ok.dlqByDefault(), ok.maintenance(),
                meterRegistry, ok.clock(), ok.scheduler(), ok.schedules(), null, ok.meterRefreshInterval(),
                observationRegistry, ok.warmPool());
    }

    @Test
    void nullsAreRejectedByName() {
        assertThatThrownBy(() -> base().applicationName(null).build()).hasMessageContaining("applicationName");
        assertThatThrownBy(() -> base().maintenance(null).build()).hasMessageContaining("maintenance");
        assertThatThrownBy(() -> base().schema(null).build()).hasMessageContaining("schema");
    }

    @Test
    void dlqForFollowsTheQueueOverTheDefault() {
        RiffleConfig on = base().dlqByDefault(true)
                .queue(QueueConfig.of("no_dlq").withDlq(false))
                .queue(QueueConfig.of("yes_dlq").withDlq(true))
                .queue(QueueConfig.withDeadline("unsaid", Duration.ofSeconds(30)))
                .build();
        assertThat(on.dlqFor("no_dlq")).isFalse();
        assertThat(on.dlqFor("yes_dlq")).isTrue();
        assertThat(on.dlqFor("unsaid")).isTrue();
        assertThat(on.dlqFor("unknown")).isTrue();

        RiffleConfig off = base().dlqByDefault(false)
                .queue(QueueConfig.of("no_dlq").withDlq(false))
                .queue(QueueConfig.of("yes_dlq").withDlq(true))
                .queue(QueueConfig.of("unsaid"))
                .build();
        assertThat(off.dlqFor("no_dlq")).isFalse();
        assertThat(off.dlqFor("yes_dlq")).isTrue();
        assertThat(off.dlqFor("unsaid")).isFalse();
        assertThat(off.dlqFor("unknown")).isFalse();
        // Not a queue any job can have: refused like everywhere else, not answered with the default.
        assertThatThrownBy(() -> off.dlqFor("bad name!"))
                .isInstanceOfSatisfying(dev.riffle.engine.api.InvalidJobException.class,
                        e -> assertThat(e.field()).isEqualTo("queue"));
    }

    @Test
    void laterQueueSettingReplacesEarlier() {
        RiffleConfig c = base().queue(QueueConfig.of("q").withDlq(true)).queue(QueueConfig.of("q").withDlq(false)).build();
        assertThat(c.queues()).hasSize(1);
        assertThat(c.dlqFor("q")).isFalse();
    }

    @Test
    void queueLookupDefaultsToNoDeadline() {
        RiffleConfig c = base().queue(QueueConfig.withDeadline("slow", Duration.ofMinutes(2))).build();
        assertThat(c.queue("slow").deadline()).isEqualTo(Duration.ofMinutes(2));
        assertThat(c.queue("other")).isEqualTo(QueueConfig.of("other"));
    }

    @Test
    void queuesAreFrozen() {
        RiffleConfig.Builder b = base().queue(QueueConfig.of("a"));
        RiffleConfig c = b.build();
        b.queue(QueueConfig.of("b"));
        assertThat(c.queues()).containsOnlyKeys("a");
        assertThatThrownBy(() -> c.queues().put("z", QueueConfig.of("z"))).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void queueConfigRejectsBadNamesBeforeReachingTheEngine() {
        assertThatThrownBy(() -> base().queue(QueueConfig.of("bad name")))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("queue"));
    }

    @Test
    void urlStringIsParsed() {
        assertThat(base().url("jdbc:postgresql://other:6000/x").build().url().port()).isEqualTo(6000);
        assertThatThrownBy(() -> RiffleConfig.builder().url("mysql://h/x")).isInstanceOf(IllegalArgumentException.class);
    }
}
