package dev.riffle.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/** The {@code riffle} health contributor's states: UP, OUT_OF_SERVICE without a leader, DOWN once closed. */
@RiffleTest
class RiffleHealthIndicatorTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void upOnceListeningWithALeader(TestDatabase db) {
        TestApps.runner(db).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            RiffleHealthIndicator indicator = ctx.getBean("riffleHealthIndicator", RiffleHealthIndicator.class);
            await().atMost(WAIT).untilAsserted(() -> {
                Health h = indicator.health().block(WAIT);
                assertThat(h.getStatus()).isEqualTo(Status.UP);
                assertThat(h.getDetails()).containsEntry("schema", db.schema()).containsEntry("migrated", true)
                        .containsEntry("listening", true).containsEntry("leader", true)
                        .containsEntry("leaderKnown", true);
            });
        });
    }

    @Test
    void outOfServiceWithoutALeaderThenUpWhenAnotherProcessLeads(TestDatabase db) {
        // This application does not campaign, and no other engine runs on the schema: no leader is known.
        TestApps.runner(db).withPropertyValues("riffle.maintenance.enabled=false").run(ctx -> {
            assertThat(ctx).hasNotFailed();
            RiffleHealthIndicator indicator = ctx.getBean(RiffleHealthIndicator.class);
            await().atMost(WAIT).until(() -> ctx.getBean(Riffle.class).stats().listening());
            Health h = indicator.health().block(WAIT);
            assertThat(h.getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
            assertThat(h.getDetails()).containsEntry("listening", true).containsEntry("leader", false)
                    .containsEntry("leaderKnown", false);

            // Another process (a second application context here) becomes leader: this one is ready now.
            TestApps.runner(db).run(other -> {
                assertThat(other).hasNotFailed();
                await().atMost(WAIT).untilAsserted(() -> {
                    Health again = indicator.health().block(WAIT);
                    assertThat(again.getStatus()).isEqualTo(Status.UP);
                    assertThat(again.getDetails()).containsEntry("leader", false).containsEntry("leaderKnown", true);
                });
            });
        });
    }

    @Test
    void downOnceTheEngineIsClosed(TestDatabase db) {
        TestApps.runner(db).run(ctx -> {
            assertThat(ctx).hasNotFailed();
            Riffle riffle = ctx.getBean(Riffle.class);
            riffle.close().block(WAIT);
            Health h = ctx.getBean(RiffleHealthIndicator.class).health().block(WAIT);
            assertThat(h.getStatus()).isEqualTo(Status.DOWN);
            assertThat(h.getDetails()).containsEntry("closed", true);
        });
    }

    @Test
    void canBeTurnedOff(TestDatabase db) {
        TestApps.runner(db).withPropertyValues("management.health.riffle.enabled=false")
                .run(ctx -> assertThat(ctx).doesNotHaveBean(RiffleHealthIndicator.class));
    }
}
