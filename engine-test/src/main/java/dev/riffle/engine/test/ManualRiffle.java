package dev.riffle.engine.test;

import dev.riffle.engine.Maintenance;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.CronFire;
import dev.riffle.engine.api.PruneOutcome;
import dev.riffle.engine.api.RescuedAttempt;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RotateOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A started engine in manual mode: maintenance runs only when the test says so. The maintenance leader and its loops
 * (promotion, ring rotation and prune, rescue, cron schedules, DLQ retention) are off ({@code MaintenanceConfig.enabled(false)}), and
 * the engine's local clock is a {@link TestClock} that stands still until the test moves it. Each {@code ...Now()}
 * method delegates to the engine's one-pass call on {@link Riffle#maintenance()} and is cold.
 *
 * <p>Get one from {@link RiffleTestKit#manual(TestDatabase)} (close it yourself, e.g. try-with-resources) or inject a
 * {@code ManualRiffle} parameter into a {@link RiffleTest} method (closed after the test). Manual means this engine
 * runs no maintenance of its own; any other engine on the same schema still may: an injected {@link Riffle} or
 * {@link RiffleTestKit} in the same test is a second engine, with its maintenance leader on, and promotes, rotates
 * and rescues on its own schedule. Inject only the {@code ManualRiffle} (its {@link #kit()} drains and awaits).
 *
 * <h2>The database clock</h2>
 * Promotion, enqueue, retry and snooze delays, rescue staleness and retention compare with the <em>database's</em>
 * clock ({@code now()}/{@code clock_timestamp()}), which no test can move; {@link #clock()} does not change what
 * {@link #promoteNow()} finds due. A test of a scheduled job therefore schedules it a little ahead of
 * {@link #databaseNow()}, checks that {@link #promoteNow()} does not make it ready before then, waits for the
 * database clock to pass {@code runAt} ({@link #awaitDatabaseTime(Instant, Duration)}), and promotes. What the test
 * clock does move is listed on {@link TestClock}.
 */
public final class ManualRiffle implements AutoCloseable {

    private final TestDatabase db;
    private final Riffle riffle;
    private final TestClock clock;
    private final RiffleTestKit kit;

    private ManualRiffle(TestDatabase db, Riffle riffle, TestClock clock) {
        this.db = db;
        this.riffle = riffle;
        this.clock = clock;
        this.kit = RiffleTestKit.of(riffle);
    }

    static ManualRiffle start(TestDatabase db, Consumer<RiffleConfig.Builder> configure) {
        Objects.requireNonNull(db, "db");
        Objects.requireNonNull(configure, "configure");
        TestClock clock = TestClock.startingNow();
        RiffleConfig.Builder builder = RiffleTestKit.testDefaults(db);
        configure.accept(builder);
        RiffleConfig chosen = builder.build();
        // The manual settings win over whatever configure chose: loops off, the test's clock. The other maintenance
        // settings (staleness, retention, rotation bounds) still shape the one-pass calls, so they are kept.
        MaintenanceConfig m = chosen.maintenance();
        MaintenanceConfig maintenance = new MaintenanceConfig(false, m.leaderRetry(), m.leaderPing(),
                m.promotionInterval(), m.promotionBatch(), m.promotionMaxBatches(), m.rotationInterval(),
                m.pruneLockTimeout(), m.rescueInterval(), m.staleAfter(), m.rescueBudget(), m.rescueWindow(),
                m.heartbeatInterval(), m.dlqRetention(), m.dlqCleanupInterval(), m.dlqCleanupBatch(),
                m.failedRetention(), m.rotationMinInterval(), m.rotationMaxAge(), m.rotationMaxRows(),
                m.historyRetention(), m.claimRotationMaxAge(), m.cronInterval());
        builder.maintenance(maintenance).clock(clock);
        return new ManualRiffle(db, RiffleTestKit.startEngine(builder.build()), clock);
    }

    /** The engine. */
    public Riffle riffle() {
        return riffle;
    }

    /** A {@link RiffleTestKit} over this engine (drain, await, enqueue). */
    public RiffleTestKit kit() {
        return kit;
    }

    /** The engine's local clock; advance it to age the engine's local timers (see {@link TestClock}). */
    public TestClock clock() {
        return clock;
    }

    /** Moves {@link #clock()} forward by {@code by}; emits nothing else. Shorthand for {@code clock().advance(by)}. */
    public Instant advanceClock(Duration by) {
        return clock.advance(by);
    }

    /** One promotion pass: due scheduled jobs (database clock) become ready; emits how many. */
    public Mono<Integer> promoteNow() {
        return maintenance().promoteNow();
    }

    /**
     * One rotation attempt of each ring (queue, lease, claim, in that order, one after the other), whatever the
     * cadence; emits the outcomes in that order.
     */
    public Mono<List<RotateOutcome>> rotateNow() {
        return Flux.fromArray(Ring.values()).concatMap(this::rotateNow).collectList();
    }

    /** One rotation attempt of {@code ring}. */
    public Mono<RotateOutcome> rotateNow(Ring ring) {
        return maintenance().rotateNow(ring);
    }

    /**
     * One prune attempt of each ring, in {@link Ring} order; emits the outcomes in that order. The history retention
     * floor ({@link MaintenanceConfig#historyRetention()}, database clock) still applies.
     */
    public Mono<List<PruneOutcome>> pruneNow() {
        return Flux.fromArray(Ring.values()).concatMap(this::pruneNow).collectList();
    }

    /** One prune attempt of {@code ring}. */
    public Mono<PruneOutcome> pruneNow(Ring ring) {
        return maintenance().pruneNow(ring);
    }

    /**
     * One pass of each rescue, as the leader's loop runs them: lease-side (stale materialized leases, callback
     * timeouts), stale attempts ({@link MaintenanceConfig#staleAfter()}, database clock), then deadlines; emits every
     * attempt rescued.
     */
    public Mono<List<RescuedAttempt>> rescueNow() {
        Maintenance m = maintenance();
        // One after the other, as the leader's loop runs them (zipWith would run them at once).
        return m.rescueLeasesNow()
                .flatMap(leases -> m.rescueStaleNow().map(stale -> concat(leases, stale)))
                .flatMap(both -> m.rescueDeadlinesNow().map(deadlines -> concat(both, deadlines)));
    }

    /** One stale-rescue pass treating attempts held longer than {@code staleAfter} (database clock) as stale. */
    public Mono<List<RescuedAttempt>> rescueStaleNow(Duration staleAfter) {
        return maintenance().rescueStaleNow(staleAfter);
    }

    /**
     * One cron pass, as the leader runs it each tick: every schedule not paused enqueues the fires due by the
     * engine's clock ({@link #clock()}, so {@link #advanceClock(Duration)} is what makes them due) since its last
     * fire; emits the fires enqueued. Schedules registered through this engine's configuration are anchored at the
     * test clock's time when the engine started.
     */
    public Mono<List<CronFire>> fireSchedulesNow() {
        return maintenance().fireSchedulesNow();
    }

    /** One DLQ retention pass; emits the number of entries deleted. */
    public Mono<Long> cleanupDlqNow() {
        return maintenance().cleanupDlqNow();
    }

    /**
     * The database's clock ({@code clock_timestamp()}), which decides when scheduled jobs are due. Blocking JDBC
     * read on the calling (test) thread.
     */
    public Instant databaseNow() {
        long micros = db.queryLong("SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint");
        return Instant.EPOCH.plus(micros, java.time.temporal.ChronoUnit.MICROS);
    }

    /**
     * Waits on the calling (test) thread until the database clock has passed {@code instant}; the wait is real time.
     *
     * @throws AssertionError when it has not within {@code timeout}
     */
    public void awaitDatabaseTime(Instant instant, Duration timeout) {
        Objects.requireNonNull(instant, "instant");
        Await.until("database clock past " + instant, timeout, () -> databaseNow().isAfter(instant));
    }

    private Maintenance maintenance() {
        return riffle.maintenance();
    }

    private static List<RescuedAttempt> concat(List<RescuedAttempt> a, List<RescuedAttempt> b) {
        List<RescuedAttempt> all = new ArrayList<>(a);
        all.addAll(b);
        return List.copyOf(all);
    }

    /** Closes the engine (blocking, bounded by {@link RiffleTestKit#DEFAULT_TIMEOUT}). */
    @Override
    public void close() {
        kit.stopBackground();
        riffle.close().block(RiffleTestKit.DEFAULT_TIMEOUT);
    }
}
