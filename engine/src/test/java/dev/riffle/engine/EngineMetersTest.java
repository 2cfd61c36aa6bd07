package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.internal.metrics.RiffleMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class EngineMetersTest {

    private static final List<String> COUNTERS = List.of("riffle.claim.batches", "riffle.claim.jobs", "riffle.claim.empty",
            "riffle.complete.batches", "riffle.complete.accepted", "riffle.complete.rejected", "riffle.rescue.stale",
            "riffle.rescue.deadline", "riffle.prune.truncated", "riffle.rescue.lease", "riffle.callbacks.registered",
            "riffle.callbacks.resumed");
    private static final List<String> GAUGES = List.of("riffle.maintenance.leader", "riffle.jobs.in_flight",
            "riffle.listener.up", "riffle.claims.running");

    private SimpleMeterRegistry registry;
    private AtomicReference<RiffleStats> current;
    private Supplier<RiffleStats> supplier;
    private RiffleMetrics held;

    private static RiffleStats stats(long base, int inFlight, boolean listening, boolean leader) {
        // Distinct values per field, so a meter wired to the wrong field reads the wrong number.
        return new RiffleStats(base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7, inFlight,
                listening, leader, base + 8, base + 9, base + 10, base + 11, base + 12, base + 13, base + 14,
                (int) base + 15, (int) base + 16);
    }

    @BeforeEach
    void setUp() {
        registry = new SimpleMeterRegistry();
        current = new AtomicReference<>(stats(0, 0, false, false));
        supplier = current::get;
    }

    private double counter(String name) {
        FunctionCounter c = registry.find(name).tag("schema", "s").functionCounter();
        assertThat(c).as("function counter %s", name).isNotNull();
        return c.count();
    }

    private double gauge(String name) {
        Gauge g = registry.find(name).tag("schema", "s").gauge();
        assertThat(g).as("gauge %s", name).isNotNull();
        return g.value();
    }

    @Test
    void documentedNamesMatchTheConstants() {
        assertThat(List.of(RiffleMetrics.CLAIM_BATCHES, RiffleMetrics.CLAIMED_JOBS, RiffleMetrics.EMPTY_CLAIMS,
                RiffleMetrics.COMPLETION_BATCHES, RiffleMetrics.COMPLETED, RiffleMetrics.REJECTED,
                RiffleMetrics.STALE_RESCUED, RiffleMetrics.DEADLINE_RESCUED, RiffleMetrics.PRUNED_SLOTS,
                RiffleMetrics.LEASE_RESCUED, RiffleMetrics.CALLBACKS_REGISTERED, RiffleMetrics.CALLBACKS_RESUMED))
                .containsExactlyElementsOf(COUNTERS);
        assertThat(List.of(RiffleMetrics.LEADER, RiffleMetrics.IN_FLIGHT, RiffleMetrics.LISTENING, RiffleMetrics.CLAIMS_RUNNING))
                .containsExactlyElementsOf(GAUGES);
    }

    @Test
    void bindRegistersEveryMeterTaggedWithTheSchema() {
        RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);

        assertThat(registry.getMeters()).hasSize(COUNTERS.size() + GAUGES.size());
        for (Meter m : registry.getMeters()) {
            assertThat(m.getId().getTags()).as(m.getId().getName()).containsExactly(Tag.of("schema", "s"));
            assertThat(m.getId().getDescription()).as(m.getId().getName()).isNotBlank();
        }
        for (String name : COUNTERS) {
            assertThat(registry.find(name).functionCounter()).as(name).isNotNull();
        }
        for (String name : GAUGES) {
            assertThat(registry.find(name).gauge()).as(name).isNotNull();
        }
    }

    @Test
    void metersReadTheMatchingStatsField() {
        RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);
        current.set(stats(100, 7, true, true));

        assertThat(counter(RiffleMetrics.CLAIM_BATCHES)).isEqualTo(101);
        assertThat(counter(RiffleMetrics.CLAIMED_JOBS)).isEqualTo(102);
        assertThat(counter(RiffleMetrics.EMPTY_CLAIMS)).isEqualTo(103);
        assertThat(counter(RiffleMetrics.COMPLETION_BATCHES)).isEqualTo(104);
        assertThat(counter(RiffleMetrics.COMPLETED)).isEqualTo(105);
        // field 6 is closed (non-success outcomes), which has no meter of its own
        assertThat(counter(RiffleMetrics.REJECTED)).isEqualTo(107);
        assertThat(counter(RiffleMetrics.STALE_RESCUED)).isEqualTo(108);
        assertThat(counter(RiffleMetrics.DEADLINE_RESCUED)).isEqualTo(109);
        assertThat(counter(RiffleMetrics.PRUNED_SLOTS)).isEqualTo(110);
        assertThat(counter(RiffleMetrics.LEASE_RESCUED)).isEqualTo(111);
        assertThat(counter(RiffleMetrics.CALLBACKS_REGISTERED)).isEqualTo(112);
        assertThat(counter(RiffleMetrics.CALLBACKS_RESUMED)).isEqualTo(113);
        assertThat(gauge(RiffleMetrics.IN_FLIGHT)).isEqualTo(7);
        assertThat(gauge(RiffleMetrics.LEADER)).isEqualTo(1);
        assertThat(gauge(RiffleMetrics.LISTENING)).isEqualTo(1);
        assertThat(gauge(RiffleMetrics.CLAIMS_RUNNING)).isEqualTo(115);
    }

    @Test
    void valuesFollowTheSupplier() {
        RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);
        assertThat(counter(RiffleMetrics.CLAIMED_JOBS)).isEqualTo(2);
        assertThat(gauge(RiffleMetrics.LEADER)).isZero();
        assertThat(gauge(RiffleMetrics.LISTENING)).isZero();

        current.set(stats(5000, 3, true, false));
        assertThat(counter(RiffleMetrics.CLAIMED_JOBS)).isEqualTo(5002);
        assertThat(gauge(RiffleMetrics.IN_FLIGHT)).isEqualTo(3);
        assertThat(gauge(RiffleMetrics.LISTENING)).isEqualTo(1);
        assertThat(gauge(RiffleMetrics.LEADER)).isZero();

        current.set(stats(5000, 0, false, true));
        assertThat(gauge(RiffleMetrics.LISTENING)).isZero();
        assertThat(gauge(RiffleMetrics.LEADER)).isEqualTo(1);
    }

    @Test
    void twoSchemasShareARegistry() {
        RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);
        RiffleMetrics.bind(registry, "t", () -> stats(900, 0, false, false), EngineMeters.ALL);

        assertThat(counter(RiffleMetrics.CLAIMED_JOBS)).isEqualTo(2);
        assertThat(registry.find(RiffleMetrics.CLAIMED_JOBS).tag("schema", "t").functionCounter().count()).isEqualTo(902);
    }

    @Test
    void closeRemovesOnlyItsOwnMeters() {
        RiffleMetrics mine = RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);
        RiffleMetrics other = RiffleMetrics.bind(registry, "t", supplier, EngineMeters.ALL);
        int each = COUNTERS.size() + GAUGES.size();
        assertThat(registry.getMeters()).hasSize(2 * each);

        mine.close();

        assertThat(registry.getMeters()).hasSize(each);
        assertThat(registry.find(RiffleMetrics.CLAIMED_JOBS).tag("schema", "s").functionCounter()).isNull();
        assertThat(registry.find(RiffleMetrics.CLAIMED_JOBS).tag("schema", "t").functionCounter()).isNotNull();
        other.close();
        assertThat(registry.getMeters()).isEmpty();
    }

    @Test
    void nullRegistryIsANoOp() {
        RiffleMetrics none = RiffleMetrics.bind(null, "s", () -> {
            throw new AssertionError("the no-op binding must never read stats");
        }, EngineMeters.ALL);
        assertThat(none).isNotNull();
        assertThatCode(none::close).doesNotThrowAnyException();
        assertThat(registry.getMeters()).isEmpty();
    }

    @Test
    void nonRegistryObjectIsRejected() {
        assertThatThrownBy(() -> RiffleMetrics.bind("not a registry", "s", supplier, EngineMeters.ALL))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("MeterRegistry")
                .hasMessageContaining("java.lang.String");
    }

    @Test
    void metersKeepWorkingWhenOnlyTheRegistryHoldsTheSupplier() {
        AtomicReference<RiffleStats> live = new AtomicReference<>(stats(0, 4, true, true));
        WeakReference<Supplier<RiffleStats>> probe = bindLikeRiffle(live);
        // A few full collections are enough to clear a weakly held supplier; stop early once it is gone.
        for (int i = 0; i < 5 && probe.get() != null; i++) {
            System.gc();
        }

        live.set(stats(1000, 4, true, true));
        assertThat(counter(RiffleMetrics.CLAIMED_JOBS)).isEqualTo(1002);
        assertThat(gauge(RiffleMetrics.IN_FLIGHT)).isEqualTo(4);
        assertThat(held).isNotNull();
    }

    /** Binds as Riffle does: it keeps the binding, but the supplier is a fresh method reference nobody else holds. */
    private WeakReference<Supplier<RiffleStats>> bindLikeRiffle(AtomicReference<RiffleStats> live) {
        Supplier<RiffleStats> s = live::get;
        held = RiffleMetrics.bind(registry, "s", s, EngineMeters.ALL);
        return new WeakReference<>(s);
    }

    @Test
    void everyCounterIsMonotonicInStats() {
        // A counter must only ever be fed cumulative totals; pin which RiffleStats accessors the counters use.
        List<ToDoubleFunction<RiffleStats>> cumulative = List.of(RiffleStats::claimBatches, RiffleStats::claimedJobs,
                RiffleStats::emptyClaims, RiffleStats::completionBatches, RiffleStats::completed, RiffleStats::rejected,
                RiffleStats::staleRescued, RiffleStats::deadlineRescued, RiffleStats::prunedSlots,
                RiffleStats::leaseRescued, RiffleStats::callbacksRegistered, RiffleStats::callbacksResumed);
        RiffleMetrics.bind(registry, "s", supplier, EngineMeters.ALL);
        RiffleStats now = stats(40, 1, true, true);
        current.set(now);
        for (int i = 0; i < COUNTERS.size(); i++) {
            assertThat(counter(COUNTERS.get(i))).as(COUNTERS.get(i)).isEqualTo(cumulative.get(i).applyAsDouble(now));
        }
    }
}
