package dev.riffle.engine.api;

import com.cronutils.model.time.ExecutionTime;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * A periodic job (docs/cron.md): at every fire time of {@code cron} in {@code zone}, the maintenance leader enqueues
 * one job of {@code kind} on {@code queue} with {@code argsJson}, {@code priority} and {@code maxAttempts}. Register
 * it in code ({@code RiffleConfig.Builder.schedule}) or through {@code RiffleAdmin.upsertSchedule}. Build with
 * {@link #builder(String, String)}; every field is validated here.
 *
 * <p>The expression has five fields (minute hour day-of-month month day-of-week, firing at second 0) or six (seconds
 * first), Spring 5.3 syntax ({@code *}, ranges, lists, steps, names, {@code L}, {@code W}, {@code #}, {@code ?}), or
 * a macro ({@code @yearly}, {@code @monthly}, {@code @weekly}, {@code @daily}, {@code @hourly}).
 *
 * @param name the schedule's name, unique per schema; the queue name rule
 * @param cron the cron expression (see above)
 * @param zone the time zone the expression is read in (default UTC); daylight-saving gaps and overlaps follow
 *             cron-utils (a local time that does not exist that day is skipped)
 * @param kind the kind of the enqueued jobs
 * @param queue their queue (default {@value NewJob#DEFAULT_QUEUE})
 * @param argsJson their arguments, a JSON object (default {@code {}})
 * @param priority their priority 1..4 (default {@value NewJob#DEFAULT_PRIORITY})
 * @param maxAttempts their attempts 1..1000 (default {@value NewJob#DEFAULT_MAX_ATTEMPTS})
 * @param catchUp most fires one evaluation enqueues, 1..{@value #MAX_CATCH_UP}: when fires were missed (no leader,
 *                an outage), the default 1 coalesces them into one job for the latest; {@code n} enqueues the latest
 *                {@code n} of them, one job each, and skips older ones
 */
public record CronSchedule(String name, String cron, ZoneId zone, String kind, String queue, String argsJson,
                           int priority, int maxAttempts, int catchUp) {

    /** Default {@link #catchUp()}: {@value}, missed fires are coalesced into one. */
    public static final int DEFAULT_CATCH_UP = 1;
    /** Largest {@link #catchUp()}: {@value}. */
    public static final int MAX_CATCH_UP = 1000;

    /** Validates all fields. */
    public CronSchedule {
        NewJob.checkName("name", name);
        CronSyntax.parse(cron);
        if (zone == null) {
            throw new InvalidJobException("zone", "must not be null");
        }
        // The job rules (names, JSON object, priority, attempts) are NewJob's: build one to apply them.
        new NewJob(kind, queue, argsJson, priority, maxAttempts, null);
        if (catchUp < 1 || catchUp > MAX_CATCH_UP) {
            throw new InvalidJobException("catchUp", "must be between 1 and " + MAX_CATCH_UP + ", got " + catchUp);
        }
    }

    /** A builder for schedule {@code name} firing at {@code cron}, with every other field at its default. */
    public static Builder builder(String name, String cron) {
        return new Builder(name, cron);
    }

    /** The job one fire enqueues (due at once). */
    public NewJob job() {
        return new NewJob(kind, queue, argsJson, priority, maxAttempts, null);
    }

    /** The first fire time strictly after {@code after}; empty when the expression never fires again. */
    public Optional<Instant> nextFireAfter(Instant after) {
        return CronSyntax.executionTime(cron).nextExecution(after.atZone(zone)).map(ZonedDateTime::toInstant);
    }

    /**
     * The latest fire times in {@code (after, until]}, at most {@code max} of them, oldest first: what one evaluation
     * at {@code until} enqueues when the last fire was at {@code after} and {@code max} is {@link #catchUp()}.
     */
    public List<Instant> firesBetween(Instant after, Instant until, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1, got " + max);
        }
        ExecutionTime times = CronSyntax.executionTime(cron);
        // Fires are whole seconds: the newest candidate is `until` itself when it matches, else the one before it.
        ZonedDateTime end = until.truncatedTo(ChronoUnit.SECONDS).atZone(zone);
        ZonedDateTime cur = times.isMatch(end) ? end : times.lastExecution(end).orElse(null);
        List<Instant> out = new ArrayList<>();
        while (cur != null && out.size() < max && cur.toInstant().isAfter(after)) {
            out.add(cur.toInstant());
            ZonedDateTime prev = times.lastExecution(cur).orElse(null);
            cur = prev != null && prev.isBefore(cur) ? prev : null;
        }
        Collections.reverse(out);
        return List.copyOf(out);
    }

    /** Mutable builder; {@link #build()} validates. */
    public static final class Builder {
        private final String name;
        private final String cron;
        private ZoneId zone = ZoneOffset.UTC;
        private String kind;
        private String queue = NewJob.DEFAULT_QUEUE;
        private String argsJson = "{}";
        private int priority = NewJob.DEFAULT_PRIORITY;
        private int maxAttempts = NewJob.DEFAULT_MAX_ATTEMPTS;
        private int catchUp = DEFAULT_CATCH_UP;

        private Builder(String name, String cron) {
            this.name = name;
            this.cron = cron;
            this.kind = name;
        }

        /** Time zone the expression is read in (default UTC). */
        public Builder zone(ZoneId zone) {
            this.zone = zone;
            return this;
        }

        /** Time zone by id, e.g. {@code Europe/Paris}; errors with {@link InvalidJobException} for an unknown id. */
        public Builder zone(String zoneId) {
            try {
                this.zone = ZoneId.of(zoneId);
            } catch (DateTimeException | NullPointerException e) {
                throw new InvalidJobException("zone", "'" + zoneId + "' is not a time zone id: " + e.getMessage(), e);
            }
            return this;
        }

        /** Kind of the enqueued jobs (default: the schedule's name). */
        public Builder kind(String kind) {
            this.kind = kind;
            return this;
        }

        /** Queue of the enqueued jobs (default {@value NewJob#DEFAULT_QUEUE}). */
        public Builder queue(String queue) {
            this.queue = queue;
            return this;
        }

        /** Arguments of the enqueued jobs, a JSON object (default {@code {}}). */
        public Builder args(String argsJson) {
            this.argsJson = argsJson;
            return this;
        }

        /** Priority 1..4 (default {@value NewJob#DEFAULT_PRIORITY}). */
        public Builder priority(int priority) {
            this.priority = priority;
            return this;
        }

        /** Maximum attempts 1..1000 (default {@value NewJob#DEFAULT_MAX_ATTEMPTS}). */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        /**
         * Catch up on missed fires: one evaluation enqueues up to {@code max} of the latest missed fires, one job
         * each (default {@value CronSchedule#DEFAULT_CATCH_UP}: coalesce them into one job for the latest).
         */
        public Builder catchUp(int max) {
            this.catchUp = max;
            return this;
        }

        /** Validates and builds. */
        public CronSchedule build() {
            return new CronSchedule(name, cron, zone, kind, queue, argsJson, priority, maxAttempts, catchUp);
        }
    }
}
