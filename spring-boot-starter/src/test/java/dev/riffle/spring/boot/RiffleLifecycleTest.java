package dev.riffle.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;

/** Graceful shutdown in the context's shutdown phase: a running handler finishes and its outcome is recorded. */
@RiffleTest
class RiffleLifecycleTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void closingTheContextLetsARunningHandlerFinish(TestDatabase db) {
        SlowHandler.started.set(0);
        SlowHandler.finished.set(0);
        TestApps.runner(db).withUserConfiguration(SlowHandler.class).withPropertyValues("riffle.shutdown.grace-period=10s")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    Riffle riffle = ctx.getBean(Riffle.class);
                    RiffleLifecycle lifecycle = ctx.getBean(RiffleLifecycle.class);
                    riffle.client().enqueue(NewJob.builder("slow").build()).block(WAIT);
                    await().atMost(WAIT).until(() -> SlowHandler.started.get() == 1);
                    // Closing here, while the handler runs: the shutdown phase waits for it (grace period 10 s).
                    ctx.close();
                    assertThat(SlowHandler.finished.get()).isEqualTo(1);
                    assertThat(riffle.isDisposed()).isTrue();
                    assertThat(lifecycle.isRunning()).isFalse();
                });
        // The outcome was recorded: a fresh engine sees the job completed, none open.
        Riffle check = Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(2)
                .maintenance(dev.riffle.engine.MaintenanceConfig.builder().enabled(false).build()).build()).block(WAIT);
        try {
            QueueCounts counts = check.counts("default").block(WAIT);
            assertThat(counts.completed()).isEqualTo(1);
            assertThat(counts.inFlight()).isZero();
            assertThat(counts.available()).isZero();
        } finally {
            check.close().block(WAIT);
        }
    }

    /** Sleeps (without blocking) for 1.5 s, counting starts and ends. */
    @Configuration(proxyBeanMethods = false)
    static class SlowHandler {
        static final AtomicInteger started = new AtomicInteger();
        static final AtomicInteger finished = new AtomicInteger();

        @Bean
        @RiffleHandler("slow")
        JobHandler slow() {
            return job -> Mono.fromRunnable(started::incrementAndGet)
                    .then(Mono.delay(Duration.ofMillis(1500)))
                    .then(Mono.fromRunnable(finished::incrementAndGet));
        }
    }
}
