package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.api.RiffleMeter;
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
            "riffle.claim.lock_detours", "riffle.complete.batches", "riffle.complete.accepted", "riffle.complete.closed",
            "riffle.complete.rejected", "riffle.rescue.stale", "riffle.rescue.deadline", "riffle.prune.truncated",
            "riffle.rescue.lease", "riffle.callbacks.registered", "riffle.callbacks.resumed");
    /** Event meters without tags of their own: registered at bind, at zero. */
    private static final List<String> EAGER = List.of("riffle.claim.duration", "riffle.claim.batch.size",
            "riffle.complete.flush.duration", "riffle.complete.flush.size", "riffle.listener.reconnects");
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
    void theStatsMetersAreTheEnumsCountersAndGaugesWithoutTags() {
        assertThat(EngineMeters.ALL.stream().map(m -> m.meter().meterName()).toList())
                .containsExactlyInAnyOrderElementsOf(concat(COUNTERS, GAUGES));
        for (RiffleMetrics.Meter<RiffleStats> m : EngineMeters.ALL) {
            assertThat(m.meter().type()).isIn(RiffleMeter.Type.COUNTER, RiffleMeter.Type.GAUGE);
            assertThat(COUNTERS.contains(m.meter().meterName())).isEqualTo(m.meter().type() == RiffleMeter.Type.COUNTER);
        }
    }

    private static List<String> concat(List<String> a, List<String> b) {
        List<String> all = new java.util.ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    @Test
    void aTaggedMeterCannotBeReadFromStats() {
        assertThatThrownBy(() -> new RiffleMetrics.Meter<RiffleStats>(RiffleMeter.OUTCOMES, s -> 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RiffleMetrics.Meter<RiffleStats>(RiffleMeter.CLAIM_DURATION, s -> 0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void queueAndKindTagsAreCappedAndFurtherValuesReadOther() {
        RiffleMetrics m = RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        for (int i = 0; i < RiffleMeter.MAX_TAG_VALUES + 20; i++) {
            m.record(RiffleMeter.OUTCOMES, 1, "q", "kind" + i, "completed");
        }
        m.record(RiffleMeter.OUTCOMES, 1, "q", "kind0", "completed");
        assertThat(registry.find("riffle.job.outcomes").counters()).hasSize(RiffleMeter.MAX_TAG_VALUES + 1);
        assertThat(registry.find("riffle.job.outcomes").tag("kind", RiffleMeter.OTHER_TAG_VALUE).counter().count())
                .isEqualTo(20);
        assertThat(registry.find("riffle.job.outcomes").tag("kind", "kind0").counter().count()).isEqualTo(2);
        // Engine-bounded tags are not capped.
        for (int i = 0; i < RiffleMeter.MAX_TAG_VALUES + 5; i++) {
            m.record(RiffleMeter.RING_OPERATIONS, 1, "queue", "prune", "o" + i);
        }
        assertThat(registry.find("riffle.ring.operations").counters()).hasSize(RiffleMeter.MAX_TAG_VALUES + 5);
    }

    @Test
    void aRecordWithTheWrongTagCountIsIgnoredNotThrown() {
        RiffleMetrics m = RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        assertThatCode(() -> m.record(RiffleMeter.OUTCOMES, 1, "q")).doesNotThrowAnyException();
        assertThat(registry.find("riffle.job.outcomes").counters()).isEmpty();
    }

    @Test
    void bindRegistersEveryMeterTaggedWithTheSchema() {
        RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);

        assertThat(registry.getMeters()).hasSize(COUNTERS.size() + GAUGES.size() + EAGER.size());
        for (Meter m : registry.getMeters()) {
            assertThat(m.getId().getTags()).as(m.getId().getName()).containsExactly(Tag.of("schema", "s"));
            assertThat(m.getId().getDescription()).as(m.getId().getName()).isNotBlank();
        }
        for (String name : EAGER) {
            assertThat(registry.find(name).meter()).as(name).isNotNull();
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
        RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        current.set(stats(100, 7, true, true));

        assertThat(counter(RiffleMeter.CLAIM_BATCHES.meterName())).isEqualTo(101);
        assertThat(counter(RiffleMeter.CLAIMED_JOBS.meterName())).isEqualTo(102);
        assertThat(counter(RiffleMeter.EMPTY_CLAIMS.meterName())).isEqualTo(103);
        assertThat(counter(RiffleMeter.CLAIM_LOCK_DETOURS.meterName())).isEqualTo(114);
        assertThat(counter(RiffleMeter.COMPLETION_BATCHES.meterName())).isEqualTo(104);
        assertThat(counter(RiffleMeter.COMPLETED.meterName())).isEqualTo(105);
        assertThat(counter(RiffleMeter.CLOSED.meterName())).isEqualTo(106);
        assertThat(counter(RiffleMeter.REJECTED.meterName())).isEqualTo(107);
        assertThat(counter(RiffleMeter.STALE_RESCUED.meterName())).isEqualTo(108);
        assertThat(counter(RiffleMeter.DEADLINE_RESCUED.meterName())).isEqualTo(109);
        assertThat(counter(RiffleMeter.PRUNED_SLOTS.meterName())).isEqualTo(110);
        assertThat(counter(RiffleMeter.LEASE_RESCUED.meterName())).isEqualTo(111);
        assertThat(counter(RiffleMeter.CALLBACKS_REGISTERED.meterName())).isEqualTo(112);
        assertThat(counter(RiffleMeter.CALLBACKS_RESUMED.meterName())).isEqualTo(113);
        assertThat(gauge(RiffleMeter.IN_FLIGHT.meterName())).isEqualTo(7);
        assertThat(gauge(RiffleMeter.LEADER.meterName())).isEqualTo(1);
        assertThat(gauge(RiffleMeter.LISTENING.meterName())).isEqualTo(1);
        assertThat(gauge(RiffleMeter.CLAIMS_RUNNING.meterName())).isEqualTo(115);
    }

    @Test
    void valuesFollowTheSupplier() {
        RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        assertThat(counter(RiffleMeter.CLAIMED_JOBS.meterName())).isEqualTo(2);
        assertThat(gauge(RiffleMeter.LEADER.meterName())).isZero();
        assertThat(gauge(RiffleMeter.LISTENING.meterName())).isZero();

        current.set(stats(5000, 3, true, false));
        assertThat(counter(RiffleMeter.CLAIMED_JOBS.meterName())).isEqualTo(5002);
        assertThat(gauge(RiffleMeter.IN_FLIGHT.meterName())).isEqualTo(3);
        assertThat(gauge(RiffleMeter.LISTENING.meterName())).isEqualTo(1);
        assertThat(gauge(RiffleMeter.LEADER.meterName())).isZero();

        current.set(stats(5000, 0, false, true));
        assertThat(gauge(RiffleMeter.LISTENING.meterName())).isZero();
        assertThat(gauge(RiffleMeter.LEADER.meterName())).isEqualTo(1);
    }

    @Test
    void twoSchemasShareARegistry() {
        RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        RiffleMetrics.bind(registry, "t", java.time.Clock.systemUTC(), () -> stats(900, 0, false, false), EngineMeters.ALL);

        assertThat(counter(RiffleMeter.CLAIMED_JOBS.meterName())).isEqualTo(2);
        assertThat(registry.find(RiffleMeter.CLAIMED_JOBS.meterName()).tag("schema", "t").functionCounter().count()).isEqualTo(902);
    }

    @Test
    void closeRemovesOnlyItsOwnMeters() {
        RiffleMetrics mine = RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        RiffleMetrics other = RiffleMetrics.bind(registry, "t", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        int each = COUNTERS.size() + GAUGES.size() + EAGER.size();
        assertThat(registry.getMeters()).hasSize(2 * each);

        mine.close();

        assertThat(registry.getMeters()).hasSize(each);
        assertThat(registry.find(RiffleMeter.CLAIMED_JOBS.meterName()).tag("schema", "s").functionCounter()).isNull();
        assertThat(registry.find(RiffleMeter.CLAIMED_JOBS.meterName()).tag("schema", "t").functionCounter()).isNotNull();
        other.close();
        assertThat(registry.getMeters()).isEmpty();
    }

    @Test
    void nullRegistryIsANoOp() {
        RiffleMetrics none = RiffleMetrics.bind(null, "s", java.time.Clock.systemUTC(), () -> {
            throw new AssertionError("the no-op binding must never read stats");
        }, EngineMeters.ALL);
        assertThat(none).isNotNull();
        assertThatCode(none::close).doesNotThrowAnyException();
        assertThat(registry.getMeters()).isEmpty();
    }

    @Test
    void nonRegistryObjectIsRejected() {
        assertThatThrownBy(() -> RiffleMetrics.bind("not a registry", "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL))
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
        assertThat(counter(RiffleMeter.CLAIMED_JOBS.meterName())).isEqualTo(1002);
        assertThat(gauge(RiffleMeter.IN_FLIGHT.meterName())).isEqualTo(4);
        assertThat(held).isNotNull();
    }

    /** Binds as Riffle does: it keeps the binding, but the supplier is a fresh method reference nobody else holds. */
    private WeakReference<Supplier<RiffleStats>> bindLikeRiffle(AtomicReference<RiffleStats> live) {
        Supplier<RiffleStats> s = live::get;
        held = RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), s, EngineMeters.ALL);
        return new WeakReference<>(s);
    }

    @Test
    void everyCounterIsMonotonicInStats() {
        // A counter must only ever be fed cumulative totals; pin which RiffleStats accessors the counters use.
        List<ToDoubleFunction<RiffleStats>> cumulative = List.of(RiffleStats::claimBatches, RiffleStats::claimedJobs,
                RiffleStats::emptyClaims, RiffleStats::lockDetours, RiffleStats::completionBatches,
                RiffleStats::completed, RiffleStats::closed, RiffleStats::rejected,
                RiffleStats::staleRescued, RiffleStats::deadlineRescued, RiffleStats::prunedSlots,
                RiffleStats::leaseRescued, RiffleStats::callbacksRegistered, RiffleStats::callbacksResumed);
        RiffleMetrics.bind(registry, "s", java.time.Clock.systemUTC(), supplier, EngineMeters.ALL);
        RiffleStats now = stats(40, 1, true, true);
        current.set(now);
        for (int i = 0; i < COUNTERS.size(); i++) {
            assertThat(counter(COUNTERS.get(i))).as(COUNTERS.get(i)).isEqualTo(cumulative.get(i).applyAsDouble(now));
        }
    }
}
