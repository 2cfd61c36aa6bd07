package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

class MaintenanceConfigTest {

    @Test
    void documentedDefaultValues() {
        assertThat(MaintenanceConfig.DEFAULT_LEADER_RETRY).isEqualTo(Duration.ofSeconds(5));
        assertThat(MaintenanceConfig.DEFAULT_LEADER_PING).isEqualTo(Duration.ofSeconds(10));
        assertThat(MaintenanceConfig.DEFAULT_PROMOTION_INTERVAL).isEqualTo(Duration.ofMillis(250));
        assertThat(MaintenanceConfig.DEFAULT_PROMOTION_BATCH).isEqualTo(4096);
        assertThat(MaintenanceConfig.DEFAULT_PROMOTION_MAX_BATCHES).isEqualTo(32);
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_INTERVAL).isEqualTo(Duration.ofSeconds(1));
        assertThat(MaintenanceConfig.DEFAULT_PRUNE_LOCK_TIMEOUT).isEqualTo(Duration.ofMillis(10));
        assertThat(MaintenanceConfig.DEFAULT_RESCUE_INTERVAL).isEqualTo(Duration.ofSeconds(5));
        assertThat(MaintenanceConfig.DEFAULT_STALE_AFTER).isEqualTo(Duration.ofSeconds(90));
        assertThat(MaintenanceConfig.DEFAULT_RESCUE_BUDGET).isEqualTo(500);
        assertThat(MaintenanceConfig.DEFAULT_RESCUE_WINDOW).isEqualTo(10_000);
        assertThat(MaintenanceConfig.DEFAULT_HEARTBEAT_INTERVAL).isEqualTo(Duration.ofSeconds(30));
        assertThat(MaintenanceConfig.DEFAULT_DLQ_RETENTION).isEqualTo(Duration.ofDays(30));
        assertThat(MaintenanceConfig.DEFAULT_DLQ_CLEANUP_INTERVAL).isEqualTo(Duration.ofSeconds(60));
        assertThat(MaintenanceConfig.DEFAULT_DLQ_CLEANUP_BATCH).isEqualTo(1000);
        assertThat(MaintenanceConfig.DEFAULT_FAILED_RETENTION).isEqualTo(Duration.ofHours(72));
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MIN_INTERVAL).isEqualTo(Duration.ofSeconds(5));
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MAX_AGE).isEqualTo(Duration.ofSeconds(30));
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MAX_ROWS).isEqualTo(100_000);
        assertThat(MaintenanceConfig.DEFAULT_HISTORY_RETENTION).isEqualTo(Duration.ofMinutes(5));
        assertThat(MaintenanceConfig.DEFAULT_CLAIM_ROTATION_MAX_AGE).isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void defaultsUseTheConstants() {
        MaintenanceConfig m = MaintenanceConfig.defaults();

        assertThat(m.enabled()).isTrue();
        assertThat(m.leaderRetry()).isEqualTo(MaintenanceConfig.DEFAULT_LEADER_RETRY);
        assertThat(m.leaderPing()).isEqualTo(MaintenanceConfig.DEFAULT_LEADER_PING);
        assertThat(m.promotionInterval()).isEqualTo(MaintenanceConfig.DEFAULT_PROMOTION_INTERVAL);
        assertThat(m.promotionBatch()).isEqualTo(MaintenanceConfig.DEFAULT_PROMOTION_BATCH);
        assertThat(m.promotionMaxBatches()).isEqualTo(MaintenanceConfig.DEFAULT_PROMOTION_MAX_BATCHES);
        assertThat(m.rotationInterval()).isEqualTo(MaintenanceConfig.DEFAULT_ROTATION_INTERVAL);
        assertThat(m.pruneLockTimeout()).isEqualTo(MaintenanceConfig.DEFAULT_PRUNE_LOCK_TIMEOUT);
        assertThat(m.rescueInterval()).isEqualTo(MaintenanceConfig.DEFAULT_RESCUE_INTERVAL);
        assertThat(m.staleAfter()).isEqualTo(MaintenanceConfig.DEFAULT_STALE_AFTER);
        assertThat(m.rescueBudget()).isEqualTo(MaintenanceConfig.DEFAULT_RESCUE_BUDGET);
        assertThat(m.rescueWindow()).isEqualTo(MaintenanceConfig.DEFAULT_RESCUE_WINDOW);
        assertThat(m.heartbeatInterval()).isEqualTo(MaintenanceConfig.DEFAULT_HEARTBEAT_INTERVAL);
        assertThat(m.dlqRetention()).isEqualTo(MaintenanceConfig.DEFAULT_DLQ_RETENTION);
        assertThat(m.dlqCleanupInterval()).isEqualTo(MaintenanceConfig.DEFAULT_DLQ_CLEANUP_INTERVAL);
        assertThat(m.dlqCleanupBatch()).isEqualTo(MaintenanceConfig.DEFAULT_DLQ_CLEANUP_BATCH);
        assertThat(m.failedRetention()).isEqualTo(MaintenanceConfig.DEFAULT_FAILED_RETENTION);
        assertThat(m.rotationMinInterval()).isEqualTo(MaintenanceConfig.DEFAULT_ROTATION_MIN_INTERVAL);
        assertThat(m.rotationMaxAge()).isEqualTo(MaintenanceConfig.DEFAULT_ROTATION_MAX_AGE);
        assertThat(m.rotationMaxRows()).isEqualTo(MaintenanceConfig.DEFAULT_ROTATION_MAX_ROWS);
        assertThat(m.historyRetention()).isEqualTo(MaintenanceConfig.DEFAULT_HISTORY_RETENTION);
        assertThat(m.claimRotationMaxAge()).isEqualTo(MaintenanceConfig.DEFAULT_CLAIM_ROTATION_MAX_AGE);
    }

    @Test
    void defaultRingHoldsMoreThanTheDefaultHistoryFloorAtLowLoad() {
        // 15 sealed queue slots (16 by default) left on age alone outlast the floor, so at low load age sets the pace.
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MAX_AGE.multipliedBy(15))
                .isGreaterThan(MaintenanceConfig.DEFAULT_HISTORY_RETENTION);
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MIN_INTERVAL).isLessThanOrEqualTo(MaintenanceConfig.DEFAULT_ROTATION_MAX_AGE);
        // 8 claim slots (the default) are pruned before their closed claims are old enough for the stale sweep.
        assertThat(MaintenanceConfig.DEFAULT_CLAIM_ROTATION_MAX_AGE.multipliedBy(8)).isLessThan(MaintenanceConfig.DEFAULT_STALE_AFTER);
        assertThat(MaintenanceConfig.DEFAULT_ROTATION_MIN_INTERVAL).isLessThanOrEqualTo(MaintenanceConfig.DEFAULT_CLAIM_ROTATION_MAX_AGE);
    }

    @Test
    void historyRetentionZeroTurnsTheFloorOffAndTheCadenceBoundsMayMeet() {
        assertThatCode(() -> MaintenanceConfig.builder().historyRetention(Duration.ZERO).build()).doesNotThrowAnyException();
        assertThatCode(() -> MaintenanceConfig.builder().rotationMinInterval(Duration.ofMillis(100))
                .rotationMaxAge(Duration.ofMillis(100)).claimRotationMaxAge(Duration.ofMillis(100)).rotationMaxRows(1).build())
                .doesNotThrowAnyException();
    }

    @Test
    void aMinimumIntervalAboveTheMaximumAgeIsRefusedWithBothValues() {
        assertThatThrownBy(() -> MaintenanceConfig.builder().rotationMaxAge(Duration.ofSeconds(2)).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rotationMinInterval (PT5S)").hasMessageContaining("rotationMaxAge (PT2S)");
    }

    @Test
    void defaultStalenessLeavesRoomForThreeMissedHeartbeats() {
        assertThat(MaintenanceConfig.DEFAULT_STALE_AFTER)
                .isGreaterThanOrEqualTo(MaintenanceConfig.DEFAULT_HEARTBEAT_INTERVAL.multipliedBy(3));
    }

    @Test
    void engineConfigCarriesTheOneInjectedClockAndScheduler() {
        Clock fixed = Clock.fixed(Instant.parse("2030-01-01T00:00:00Z"), ZoneOffset.UTC);
        VirtualTimeScheduler vts = VirtualTimeScheduler.create();
        try {
            RiffleConfig c = RiffleConfig.builder().url("postgresql://localhost/test").clock(fixed).scheduler(vts).build();
            assertThat(c.clock()).isSameAs(fixed);
            assertThat(c.scheduler()).isSameAs(vts);
            RiffleConfig d = RiffleConfig.builder().url("postgresql://localhost/test").build();
            assertThat(d.clock()).isEqualTo(Clock.systemUTC());
            assertThat(d.scheduler()).isSameAs(Schedulers.parallel());
        } finally {
            vts.dispose();
        }
    }

    static Stream<Arguments> invalid() {
        return Stream.of(
                bad("leaderRetry", b -> b.leaderRetry(Duration.ZERO)),
                bad("leaderPing", b -> b.leaderPing(Duration.ofSeconds(-1))),
                bad("promotionInterval", b -> b.promotionInterval(Duration.ZERO)),
                bad("rotationInterval", b -> b.rotationInterval(null)),
                bad("pruneLockTimeout", b -> b.pruneLockTimeout(Duration.ZERO)),
                bad("rescueInterval", b -> b.rescueInterval(Duration.ZERO)),
                bad("staleAfter", b -> b.staleAfter(Duration.ZERO)),
                bad("heartbeatInterval", b -> b.heartbeatInterval(Duration.ZERO)),
                bad("dlqRetention", b -> b.dlqRetention(Duration.ofDays(-1))),
                bad("dlqCleanupInterval", b -> b.dlqCleanupInterval(Duration.ZERO)),
                bad("failedRetention", b -> b.failedRetention(Duration.ZERO)),
                bad("rotationMinInterval", b -> b.rotationMinInterval(Duration.ZERO)),
                bad("rotationMinInterval", b -> b.rotationMinInterval(null)),
                bad("rotationMaxAge", b -> b.rotationMaxAge(Duration.ofSeconds(-1))),
                bad("rotationMaxRows", b -> b.rotationMaxRows(0)),
                bad("claimRotationMaxAge", b -> b.claimRotationMaxAge(Duration.ZERO)),
                bad("claimRotationMaxAge", b -> b.claimRotationMaxAge(Duration.ofSeconds(4))),
                bad("historyRetention", b -> b.historyRetention(Duration.ofSeconds(-1))),
                bad("historyRetention", b -> b.historyRetention(null)),
                bad("promotionBatch", b -> b.promotionBatch(0)),
                bad("promotionBatch", b -> b.promotionBatch(100_001)),
                bad("promotionMaxBatches", b -> b.promotionMaxBatches(0)),
                bad("promotionMaxBatches", b -> b.promotionMaxBatches(1001)),
                bad("rescueBudget", b -> b.rescueBudget(0)),
                bad("rescueBudget", b -> b.rescueBudget(100_001)),
                bad("rescueWindow", b -> b.rescueWindow(0)),
                bad("rescueWindow", b -> b.rescueWindow(1_000_001)),
                bad("dlqCleanupBatch", b -> b.dlqCleanupBatch(0)),
                bad("dlqCleanupBatch", b -> b.dlqCleanupBatch(100_001)),
                bad("staleAfter", b -> b.heartbeatInterval(Duration.ofSeconds(30)).staleAfter(Duration.ofSeconds(89))),
                bad("staleAfter", b -> b.heartbeatInterval(Duration.ofSeconds(31))),
                bad("staleAfter", b -> b.heartbeatInterval(Duration.ofSeconds(1)).staleAfter(Duration.ofMillis(2999))));
    }

    private static Arguments bad(String field, Consumer<MaintenanceConfig.Builder> change) {
        return Arguments.of(field, change);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalid")
    void invalidSettingsNameTheField(String field, Consumer<MaintenanceConfig.Builder> change) {
        MaintenanceConfig.Builder b = MaintenanceConfig.builder();
        change.accept(b);
        assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(field);
    }

    @Test
    void stalenessOfExactlyThreeHeartbeatsIsAccepted() {
        assertThatCode(() -> MaintenanceConfig.builder().heartbeatInterval(Duration.ofSeconds(2))
                .staleAfter(Duration.ofSeconds(6)).build()).doesNotThrowAnyException();
    }

    @Test
    void rangeBoundsAreInclusive() {
        assertThatCode(() -> MaintenanceConfig.builder().promotionBatch(1).promotionMaxBatches(1).rescueBudget(1)
                .rescueWindow(1).dlqCleanupBatch(1).build()).doesNotThrowAnyException();
        assertThatCode(() -> MaintenanceConfig.builder().promotionBatch(100_000).promotionMaxBatches(1000)
                .rescueBudget(100_000).rescueWindow(1_000_000).dlqCleanupBatch(100_000).build()).doesNotThrowAnyException();
    }

    @Test
    void clockAndSchedulerAreRequired() {
        assertThatThrownBy(() -> RiffleConfig.builder().url("postgresql://localhost/test").clock(null).build())
                .isInstanceOf(NullPointerException.class).hasMessageContaining("clock");
        assertThatThrownBy(() -> RiffleConfig.builder().url("postgresql://localhost/test").scheduler(null).build())
                .isInstanceOf(NullPointerException.class).hasMessageContaining("scheduler");
    }
}
