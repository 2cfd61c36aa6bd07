package dev.riffle.engine.internal.cron;

import dev.riffle.engine.api.CronFire;
import dev.riffle.engine.api.CronSchedule;
import dev.riffle.engine.api.CronScheduleStatus;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.internal.sql.Db;
import io.r2dbc.spi.Readable;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The stored schedules and the fire pass. Time is the engine's clock ({@code RiffleConfig.clock()}): it decides which
 * fire times are due and anchors registrations and resumes, so a test clock steps schedules deterministically. The
 * database clock decides nothing here; the enqueued jobs are due at once.
 *
 * <p>{@link #fireDue()} is what the maintenance leader runs each tick, and is safe to run from any number of
 * engines at once: each fire goes through {@code cron_fire}, whose compare-and-set on the schedule's last fire and
 * revision lets exactly one caller enqueue it.
 */
public final class CronSchedules {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.maintenance");

    private final Db db;
    private final Clock clock;

    /** Creates the service. */
    public CronSchedules(Db db, Clock clock) {
        this.db = db;
        this.clock = clock;
    }

    /** A schedule row as read, with what the compare-and-set needs. */
    private record Stored(CronSchedule schedule, boolean paused, long revision, @Nullable Instant lastFireAt,
                          Instant evaluateFrom) {

        /** Fires after this instant are due; the ones at or before it were enqueued or are skipped. */
        Instant base() {
            return lastFireAt != null && lastFireAt.isAfter(evaluateFrom) ? lastFireAt : evaluateFrom;
        }
    }

    /** Creates or changes {@code schedule}; emits true when the stored definition changed. Cold. */
    public Mono<Boolean> upsert(CronSchedule schedule) {
        Objects.requireNonNull(schedule, "schedule");
        return Mono.defer(() -> {
            String now = clock.instant().toString();
            return db.query("cron_upsert", st -> st.bind("$1", schedule.name()).bind("$2", schedule.cron())
                                    .bind("$3", schedule.zone().getId()).bind("$4", schedule.kind())
                                    .bind("$5", schedule.queue()).bind("$6", schedule.argsJson())
                                    .bind("$7", schedule.priority()).bind("$8", schedule.maxAttempts())
                                    .bind("$9", schedule.catchUp()).bind("$10", now),
                            row -> Boolean.TRUE.equals(row.get("changed", Boolean.class)))
                    .single();
        });
    }

    /** Registers every schedule of {@code schedules}, one after the other. Cold. */
    public Mono<Void> upsertAll(List<CronSchedule> schedules) {
        return Flux.fromIterable(schedules).concatMap(this::upsert, 1).then();
    }

    /** Every stored schedule by name, with its last and next fire. Cold. */
    public Flux<CronScheduleStatus> list() {
        return Flux.defer(() -> {
            Instant now = clock.instant();
            return db.query("cron_list", st -> {}, Raw::of)
                    .collectList()
                    .flatMapIterable(all -> all)
                    .map(Raw::stored)
                    .map(s -> new CronScheduleStatus(s.schedule(), s.paused(), s.lastFireAt(),
                            s.paused() ? null : s.schedule().nextFireAfter(s.base()).orElse(null)));
        });
    }

    /** Pauses {@code name}; emits true when it was running. Cold. */
    public Mono<Boolean> pause(String name) {
        return checked(name).flatMap(n -> db.query("cron_pause", st -> st.bind("$1", n), row -> true).hasElements());
    }

    /** Resumes {@code name} from now on (fires while paused are skipped); emits true when it was paused. Cold. */
    public Mono<Boolean> resume(String name) {
        return checked(name).flatMap(n -> db.query("cron_resume",
                st -> st.bind("$1", n).bind("$2", clock.instant().toString()), row -> true).hasElements());
    }

    /** Deletes {@code name}; emits true when it existed. Cold. */
    public Mono<Boolean> delete(String name) {
        return checked(name).flatMap(n -> db.query("cron_delete", st -> st.bind("$1", n), row -> true).hasElements());
    }

    private static Mono<String> checked(String name) {
        Objects.requireNonNull(name, "name");
        return Mono.fromCallable(() -> NewJob.checkName("name", name));
    }

    /**
     * One fire pass: for every schedule not paused, the fire times due by the engine's clock since its last fire
     * (at most its {@code catchUp}, the latest ones) are sent to {@code cron_fire}; emits the fires this call
     * enqueued. A schedule whose row changed meanwhile, or that another engine fired first, enqueues nothing here.
     * A schedule that fails (a bad row) is logged and skipped; the others still fire. Cold.
     */
    public Mono<List<CronFire>> fireDue() {
        return Mono.defer(() -> {
            Instant now = clock.instant();
            return db.query("cron_due", st -> {}, Raw::of)
                    .collectList()
                    .flatMapIterable(all -> all)
                    .concatMap(raw -> Mono.fromCallable(raw::stored)
                            .flatMapMany(s -> fire(s, now))
                            .onErrorResume(e -> {
                                log.warn("cron schedule {} could not fire: {}", raw.name(), e.toString());
                                return Flux.empty();
                            }), 1)
                    .collectList();
        });
    }

    private Flux<CronFire> fire(Stored s, Instant now) {
        List<Instant> fires = s.schedule().firesBetween(s.base(), now, s.schedule().catchUp());
        if (fires.isEmpty()) {
            return Flux.empty();
        }
        String[] at = fires.stream().map(Instant::toString).toArray(String[]::new);
        String name = s.schedule().name();
        return db.query("cron_fire", st -> {
            st.bind("$1", name).bind("$2", s.revision());
            if (s.lastFireAt() == null) {
                st.bindNull("$3", String.class);
            } else {
                st.bind("$3", s.lastFireAt().toString());
            }
            st.bind("$4", at);
        }, row -> new CronFire(name, instant(row, "fire_at"), Objects.requireNonNull(row.get("job_id", Long.class))));
    }

    /**
     * A row as read, validated only when used: a row that no longer validates (edited by hand) must not keep the
     * other schedules from firing.
     */
    private record Raw(String name, String cron, String zone, String kind, String queue, String args, int priority,
                       int maxAttempts, int catchUp, boolean paused, long revision, @Nullable Instant lastFireAt,
                       Instant evaluateFrom) {

        static Raw of(Readable row) {
            OffsetDateTime last = row.get("last_fire_at", OffsetDateTime.class);
            return new Raw(text(row, "name"), text(row, "cron"), text(row, "zone"), text(row, "kind"),
                    text(row, "queue"), text(row, "args"), number(row, "priority"), number(row, "max_attempts"),
                    number(row, "catch_up"), Boolean.TRUE.equals(row.get("paused", Boolean.class)),
                    Objects.requireNonNull(row.get("revision", Long.class)), last == null ? null : last.toInstant(),
                    instant(row, "evaluate_from"));
        }

        Stored stored() {
            CronSchedule schedule = new CronSchedule(name, cron, ZoneId.of(zone), kind, queue, args, priority,
                    maxAttempts, catchUp);
            return new Stored(schedule, paused, revision, lastFireAt, evaluateFrom);
        }
    }

    private static String text(Readable row, String column) {
        return Objects.requireNonNull(row.get(column, String.class), column);
    }

    private static int number(Readable row, String column) {
        return Objects.requireNonNull(row.get(column, Integer.class), column);
    }

    private static Instant instant(Readable row, String column) {
        return Objects.requireNonNull(row.get(column, OffsetDateTime.class), column).toInstant();
    }
}
