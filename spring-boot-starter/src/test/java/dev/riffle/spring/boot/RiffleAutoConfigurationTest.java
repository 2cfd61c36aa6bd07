package dev.riffle.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;

/** The auto-configuration against a real database: properties, back-off, handlers by kind, Micrometer, migrations. */
@RiffleTest
class RiffleAutoConfigurationTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void bindsRiffleProperties(TestDatabase db) {
        TestApps.runner(db).withPropertyValues(
                        "riffle.pool-size=7", "riffle.application-name=shop", "riffle.max-claim-batch=64",
                        "riffle.completion-window=3ms", "riffle.poll-interval=150ms", "riffle.safety-poll-interval=2s",
                        "riffle.meter-refresh-interval=30s",
                        "riffle.max-args-bytes=1024", "riffle.copy-enqueue-threshold=500", "riffle.work-prefetch=false", "riffle.claim-concurrency=3",
                        "riffle.dlq-by-default=false", "riffle.maintenance.history-retention=10m",
                        "riffle.maintenance.stale-after=2m", "riffle.maintenance.heartbeat-interval=20s",
                        "riffle.maintenance.dlq-retention=7d", "riffle.queues.mail.deadline=30s",
                        "riffle.queues.mail.dlq=true", "riffle.queues.mail.enqueue-shards=8",
                        "riffle.queues.reports.materialized-leases=true", "riffle.worker.concurrency=5",
                        "riffle.worker.queues=mail,reports", "riffle.shutdown.grace-period=3s")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    RiffleConfig c = ctx.getBean(RiffleConfig.class);
                    assertThat(c.schema()).isEqualTo(db.schema());
                    assertThat(c.url()).isNull();
                    assertThat(c.connectionFactory()).isSameAs(ctx.getBean(ConnectionFactory.class));
                    assertThat(c.poolSize()).isEqualTo(7);
                    assertThat(c.applicationName()).isEqualTo("shop");
                    assertThat(c.maxClaimBatch()).isEqualTo(64);
                    assertThat(c.completionWindow()).isEqualTo(Duration.ofMillis(3));
                    assertThat(c.pollInterval()).isEqualTo(Duration.ofMillis(150));
                    assertThat(c.safetyPollInterval()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(c.meterRefreshInterval()).isEqualTo(Duration.ofSeconds(30));
                    assertThat(c.maxArgsBytes()).isEqualTo(1024);
                    assertThat(c.copyEnqueueThreshold()).isEqualTo(500);
                    assertThat(c.workPrefetch()).isFalse();
                    assertThat(c.claimConcurrency()).isEqualTo(3);
                    assertThat(c.dlqByDefault()).isFalse();
                    assertThat(c.maintenance().historyRetention()).isEqualTo(Duration.ofMinutes(10));
                    assertThat(c.maintenance().staleAfter()).isEqualTo(Duration.ofMinutes(2));
                    assertThat(c.maintenance().heartbeatInterval()).isEqualTo(Duration.ofSeconds(20));
                    assertThat(c.maintenance().dlqRetention()).isEqualTo(Duration.ofDays(7));
                    assertThat(c.queue("mail")).isEqualTo(new QueueConfig("mail", Duration.ofSeconds(30), true, false, 8));
                    assertThat(c.queue("reports").materialize()).isTrue();
                    // riffle-migrations is on this classpath: migrate, with Flyway's JDBC coordinates from spring.r2dbc.*
                    assertThat(c.migrate()).isTrue();
                    assertThat(c.migrationUrl()).isNotNull();
                    assertThat(c.migrationUrl().host()).isEqualTo(db.url().host());
                    assertThat(c.migrationUrl().port()).isEqualTo(db.url().port());
                    assertThat(c.migrationUrl().database()).isEqualTo(db.url().database());
                    assertThat(c.migrationUrl().user()).isEqualTo(db.url().user());
                    assertThat(ctx.getBean(Riffle.class).config()).isSameAs(c);
                    RiffleLifecycle lifecycle = ctx.getBean(RiffleLifecycle.class);
                    assertThat(lifecycle.isRunning()).isTrue();
                    assertThat(lifecycle.getPhase()).isEqualTo(RiffleLifecycle.PHASE);
                });
    }

    @Test
    void migrationUrlPropertyWinsOverSpringR2dbc(TestDatabase db) {
        TestApps.runner(db).withPropertyValues("riffle.migration.url=jdbc:postgresql://" + db.url().host() + ":"
                        + db.url().port() + "/" + db.url().database() + "?user=someone", "riffle.migration.username="
                        + db.url().user())
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    RiffleConfig c = ctx.getBean(RiffleConfig.class);
                    // the username property overrides the URL's user
                    assertThat(c.migrationUrl().user()).isEqualTo(db.url().user());
                });
    }

    @Test
    void backsOffWhenTheApplicationDefinesItsOwnRiffle(TestDatabase db) {
        TestApps.runner(db).withUserConfiguration(OwnRiffle.class).withPropertyValues("test.url=" + db.url().r2dbcUrl())
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    assertThat(ctx).hasSingleBean(Riffle.class);
                    assertThat(ctx).doesNotHaveBean(RiffleConfig.class);
                    Riffle own = ctx.getBean(Riffle.class);
                    assertThat(own.config().applicationName()).isEqualTo("own-engine");
                    // the lifecycle, handlers and health still apply to the application's engine
                    assertThat(ctx).hasSingleBean(RiffleLifecycle.class);
                    assertThat(ctx).hasSingleBean(RiffleHealthIndicator.class);
                });
    }

    @Test
    void usesTheApplicationsRiffleConfig(TestDatabase db) {
        TestApps.runner(db).withUserConfiguration(OwnConfig.class)
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    assertThat(ctx.getBean(Riffle.class).config().applicationName()).isEqualTo("own-config");
                });
    }

    @Test
    void customizersAdjustTheConfig(TestDatabase db) {
        TestApps.runner(db)
                .withBean(RiffleConfigCustomizer.class, () -> b -> b.queue(QueueConfig.withDeadline("slow",
                        Duration.ofMinutes(5))))
                .run(ctx -> assertThat(ctx.getBean(RiffleConfig.class).queue("slow").deadline())
                        .isEqualTo(Duration.ofMinutes(5)));
    }

    @Test
    void runsHandlerBeansByKind(TestDatabase db) {
        TestApps.runner(db).withUserConfiguration(Handlers.class).withPropertyValues("riffle.worker.queues=default,other")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    assertThat(ctx.getBean(RiffleHandlers.class).byKind()).containsOnlyKeys("greet", "count");
                    Riffle riffle = ctx.getBean(Riffle.class);
                    Handlers handlers = ctx.getBean(Handlers.class);
                    long greet = riffle.client().enqueue(NewJob.builder("greet").args("{\"who\":\"ada\"}").build())
                            .block(WAIT);
                    long count = riffle.client().enqueue(NewJob.builder("count").queue("other").build()).block(WAIT);
                    await().atMost(WAIT).untilAsserted(() -> assertThat(handlers.seen)
                            .containsExactlyInAnyOrder("greet:" + greet, "count:" + count));
                });
    }

    @Test
    void refusesTwoHandlersForOneKind(TestDatabase db) {
        TestApps.runner(db).withUserConfiguration(DuplicateKind.class).run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("both handle kind 'dup'");
        });
    }

    @Test
    void refusesAHandlerWithoutKind(TestDatabase db) {
        TestApps.runner(db).withBean("anonymous", JobHandler.class, () -> job -> Mono.empty()).run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(ctx.getStartupFailure()).rootCause()
                    .hasMessageContaining("JobHandler bean 'anonymous' has no kind");
        });
    }

    @Test
    void refusesAnInvalidKind(TestDatabase db) {
        // The engine starts before the handlers are checked: the failed context must close it, not leave its
        // maintenance loops running on the application's closed pool.
        java.util.List<Riffle> engines = new java.util.concurrent.CopyOnWriteArrayList<>();
        org.springframework.beans.factory.config.BeanPostProcessor capture =
                new org.springframework.beans.factory.config.BeanPostProcessor() {
                    @Override
                    public Object postProcessAfterInitialization(Object bean, String name) {
                        if (bean instanceof Riffle r) {
                            engines.add(r);
                        }
                        return bean;
                    }
                };
        TestApps.runner(db).withBean("captureRiffle", org.springframework.beans.factory.config.BeanPostProcessor.class,
                        () -> capture)
                .withBean("bad", RiffleJobHandler.class, () -> new RiffleJobHandler() {
            @Override
            public String kind() {
                return "no spaces";
            }

            @Override
            public Mono<JobOutcome> handle(dev.riffle.engine.api.Job job) {
                return Mono.empty();
            }
        }).run(ctx -> {
            assertThat(ctx).hasFailed();
            assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("'no spaces' is invalid");
        });
        assertThat(engines).as("the engine was started before the failure").hasSize(1);
        await("the failed context's engine closed").atMost(Duration.ofSeconds(10))
                .until(() -> engines.get(0).isDisposed());
    }

    @Test
    void bindsTheApplicationsMeterRegistry(TestDatabase db) {
        TestApps.runner(db).withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            MeterRegistry registry = ctx.getBean(MeterRegistry.class);
            assertThat(ctx.getBean(RiffleConfig.class).meterRegistry()).isSameAs(registry);
            assertThat(registry.getMeters()).anySatisfy(m -> assertThat(m.getId().getName()).startsWith("riffle."));
        });
    }

    @Test
    void bindsTheApplicationsObservationRegistry(TestDatabase db) {
        java.util.List<String> observed = new java.util.concurrent.CopyOnWriteArrayList<>();
        ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig().observationHandler(context -> {
            observed.add(context.getName());
            return false;
        });
        TestApps.runner(db).withBean(ObservationRegistry.class, () -> registry).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx.getBean(RiffleConfig.class).observationRegistry()).isSameAs(registry);
            ctx.getBean(Riffle.class).client().enqueue(NewJob.builder("observed.kind").queue("observed").build())
                    .block(Duration.ofSeconds(10));
            assertThat(observed).contains("riffle.enqueue");
        });
    }

    @Test
    void bindsTheApplicationsArgsCodecAndCronScheduleBeans(TestDatabase db) {
        dev.riffle.engine.api.ArgsCodec codec = new dev.riffle.engine.api.ArgsCodec() {
            // Text args as {"text": "..."} both ways (no quotes or escapes inside, which is all this test sends).
            @Override
            public String encode(Object args) {
                return "{\"text\":\"" + args + "\"}";
            }

            @Override
            public <T> T decode(String json, Class<T> type) {
                return type.cast(json.substring(json.indexOf(":\"") + 2, json.lastIndexOf('"')));
            }
        };
        dev.riffle.engine.api.CronSchedule nightly = dev.riffle.engine.api.CronSchedule.builder("nightly", "0 30 2 * * *")
                .kind("report.build").queue("reports").build();
        TestApps.runner(db).withBean(dev.riffle.engine.api.ArgsCodec.class, () -> codec)
                .withBean("nightly", dev.riffle.engine.api.CronSchedule.class, () -> nightly).run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    RiffleConfig config = ctx.getBean(RiffleConfig.class);
                    assertThat(config.argsCodec()).isSameAs(codec);
                    assertThat(config.argsCodec().decode(config.argsCodec().encode("hi"), String.class)).isEqualTo("hi");
                    assertThat(config.schedules()).containsExactly(nightly);
                });
    }

    @Test
    void noMeterRegistryWithoutOne(TestDatabase db) {
        TestApps.runner(db).run(ctx -> {
            assertThat(ctx.getBean(RiffleConfig.class).meterRegistry()).isNull();
            assertThat(ctx.getBean(RiffleConfig.class).observationRegistry()).isNull();
        });
    }

    @Test
    void withoutRiffleMigrationsExpectsAMigratedSchema(TestDatabase db) {
        TestApps.runner(db).withClassLoader(new FilteredClassLoader("dev.riffle.migrations"))
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    assertThat(ctx.getBean(RiffleConfig.class).migrate()).isFalse();
                });
    }

    @Test
    void migrateTrueWithoutRiffleMigrationsFailsClearly(TestDatabase db) {
        TestApps.runner(db).withClassLoader(new FilteredClassLoader("dev.riffle.migrations"))
                .withPropertyValues("riffle.migrate=true")
                .run(ctx -> {
                    assertThat(ctx).hasFailed();
                    assertThat(ctx.getStartupFailure()).rootCause()
                            .hasMessageContaining("riffle.migrate=true needs dev.riffle:riffle-migrations");
                });
    }

    @Test
    void disabledMeansNoEngine(TestDatabase db) {
        TestApps.runner(db).withPropertyValues("riffle.enabled=false").run(ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx).doesNotHaveBean(Riffle.class);
            assertThat(ctx).doesNotHaveBean(RiffleLifecycle.class);
        });
    }

    @Test
    void withoutADatabaseFailsClearly(TestDatabase db) {
        new org.springframework.boot.test.context.runner.ApplicationContextRunner()
                .withConfiguration(org.springframework.boot.autoconfigure.AutoConfigurations.of(RiffleAutoConfiguration.class))
                .run(ctx -> {
                    assertThat(ctx).hasFailed();
                    assertThat(ctx.getStartupFailure()).rootCause().hasMessageContaining("Riffle needs a database");
                });
    }

    @Test
    void ownUrlInsteadOfTheApplicationsFactory(TestDatabase db) {
        TestApps.runner(db).withPropertyValues("riffle.url=" + db.url().r2dbcUrl(), "riffle.migrate=false")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    RiffleConfig c = ctx.getBean(RiffleConfig.class);
                    assertThat(c.connectionFactory()).isNull();
                    assertThat(c.url()).isNotNull();
                    assertThat(c.url().host()).isEqualTo(db.url().host());
                    assertThat(c.url().database()).isEqualTo(db.url().database());
                });
    }

    /** An application that builds its own engine. */
    @Configuration(proxyBeanMethods = false)
    static class OwnRiffle {
        @Bean(destroyMethod = "")
        Riffle myRiffle(org.springframework.core.env.Environment env) {
            return Riffle.start(RiffleConfig.builder().url(env.getRequiredProperty("test.url"))
                    .schema(env.getRequiredProperty("riffle.schema")).migrate(false).poolSize(2)
                    .applicationName("own-engine").build()).block(WAIT);
        }
    }

    /** An application that provides the configuration, leaving the engine to the starter. */
    @Configuration(proxyBeanMethods = false)
    static class OwnConfig {
        @Bean
        RiffleConfig myConfig(ConnectionFactory cf, org.springframework.core.env.Environment env) {
            return RiffleConfig.builder().connectionFactory(cf).schema(env.getRequiredProperty("riffle.schema"))
                    .migrate(false).applicationName("own-config").build();
        }
    }

    /** Two handlers, one annotated, one naming its kind. */
    @Configuration(proxyBeanMethods = false)
    static class Handlers {
        final Queue<String> seen = new ConcurrentLinkedQueue<>();

        @Bean
        @RiffleHandler("greet")
        JobHandler greeter() {
            return job -> Mono.fromRunnable(() -> seen.add("greet:" + job.id()));
        }

        @Bean
        Counter counter() {
            return new Counter(seen);
        }
    }

    /** A handler that names its kind. */
    static final class Counter implements RiffleJobHandler {
        private final Queue<String> seen;

        Counter(Queue<String> seen) {
            this.seen = seen;
        }

        @Override
        public String kind() {
            return "count";
        }

        @Override
        public Mono<JobOutcome> handle(dev.riffle.engine.api.Job job) {
            return Mono.fromRunnable(() -> seen.add("count:" + job.id()));
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class DuplicateKind {
        @Bean
        @RiffleHandler("dup")
        JobHandler first() {
            return job -> Mono.empty();
        }

        @Bean
        @RiffleHandler("dup")
        JobHandler second() {
            return job -> Mono.empty();
        }
    }
}
