package dev.riffle.engine;

import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.CronSchedule;
import dev.riffle.engine.api.CronScheduleStatus;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobError;
import dev.riffle.engine.api.JobInfo;
import dev.riffle.engine.api.JobPage;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueDepth;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.cron.CronSchedules;
import dev.riffle.engine.internal.doctor.Doctor;
import dev.riffle.engine.internal.enqueue.UniqueParams;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Operator actions: job lookup and cancel by job id, pause and resume a queue, cron schedules, DLQ management. Every method is cold and runs one transaction per
 * statement. A statement that fails with a deadlock or serialization failure (rolled back whole by the server) is
 * run again after a short backoff, a few times, before the error reaches the caller: an operator should not see a
 * lock conflict with the engine's own traffic as a failed action.
 */
public final class RiffleAdmin {

    /** Largest page of a DLQ listing and largest bulk retry/purge batch. */
    public static final int MAX_PAGE = 1000;

    /** Most jobs one {@link #searchJobs} page returns. */
    public static final int MAX_SEARCH = 200;

    /** How many candidates per wanted job a search by a ready-ring state looks up, at most. */
    public static final int SEARCH_SCAN_FACTOR = 5;

    /** Most candidates one search looks up. */
    public static final int MAX_SEARCH_SCAN = 1000;

    // About 0.6 s in all (20, 40, 80, 160, 320 ms, with jitter): long enough for the other side of a deadlock to
    // commit, short enough for an interactive call. When it runs out, the last database error is signalled as is.
    private static final Retry ON_CONFLICT = Retry.backoff(5, Duration.ofMillis(20)).maxBackoff(Duration.ofMillis(500))
            .filter(Db::isConflict)
            .onRetryExhaustedThrow((spec, signal) -> signal.failure());

    private final Db db;
    private final String applicationName;
    private final CronSchedules cron;
    private final Doctor doctor;

    RiffleAdmin(Db db, String applicationName, CronSchedules cron, MaintenanceConfig maintenance) {
        this.db = db;
        this.applicationName = applicationName;
        this.cron = cron;
        this.doctor = new Doctor(db, maintenance.historyRetention(), maintenance.failedRetention());
    }

    /**
     * The proof doctor (docs/operations.md#proof-doctor): checks the storage invariants on the live schema — every
     * claim slot's claims and closures balance or its open attempts are named, no closure without its claim and none
     * twice, no slot holding rows of another generation, ring, rescue and lane cursors within bounds, no update or
     * delete on an append-only ring table — and names what blocks each ring's next prune and why. One read-only
     * statement (its transaction is made read-only before any check runs); bounded, and safe beside live traffic:
     * it reads the claim ring and the queue and lease rings' tables once, and names at most
     * {@value DoctorReport#NAMED_PER_SLOT} attempts or rows per slot. The history floor is judged with this
     * engine's {@link MaintenanceConfig#historyRetention()} and {@link MaintenanceConfig#failedRetention()}. Cold.
     */
    public Mono<DoctorReport> doctor() {
        return doctor.run();
    }

    /**
     * The name of every queue the schema knows: those with a lane (anything was ever enqueued), settings (paused, DLQ
     * policy), scheduled jobs or DLQ entries; sorted. An admin read that scans the deferred backlog. Cold.
     */
    public Flux<String> queues() {
        return db.query("queues", st -> {}, row -> row.get("queue", String.class)).collectList()
                .retryWhen(ON_CONFLICT)
                .flatMapIterable(q -> q);
    }

    /**
     * Every stored cron schedule (registered in code or here), by name, with its last fire and its next fire time by
     * this engine's clock (docs/cron.md). Cold.
     */
    public Flux<CronScheduleStatus> schedules() {
        return cron.list().retryWhen(ON_CONFLICT);
    }

    /**
     * Creates the schedule, or changes the stored one of that name. A change of definition takes effect from now:
     * the new expression never fires for the time before the change. Pause state and last fire are kept. Emits
     * true when something changed, false when the stored definition was the same already. Cold.
     */
    public Mono<Boolean> upsertSchedule(CronSchedule schedule) {
        return cron.upsert(Objects.requireNonNull(schedule, "schedule")).retryWhen(ON_CONFLICT);
    }

    /**
     * Pauses a schedule: the leader enqueues none of its fires until {@link #resumeSchedule(String)}. Emits true when
     * it was running, false when it was paused already or does not exist. Errors with {@link InvalidJobException} for
     * an invalid name. Cold.
     */
    public Mono<Boolean> pauseSchedule(String name) {
        return cron.pause(name).retryWhen(ON_CONFLICT);
    }

    /**
     * Resumes a paused schedule from now on: fires that fell due while it was paused are skipped, not caught up.
     * Emits true when it was paused, false otherwise. Errors with {@link InvalidJobException} for an invalid name.
     * Cold.
     */
    public Mono<Boolean> resumeSchedule(String name) {
        return cron.resume(name).retryWhen(ON_CONFLICT);
    }

    /**
     * Deletes a schedule; emits true when it existed. A schedule registered in code comes back at the next engine
     * start unless the code drops it too. Jobs it already enqueued are not touched. Cold.
     */
    public Mono<Boolean> deleteSchedule(String name) {
        return cron.delete(name).retryWhen(ON_CONFLICT);
    }

    /**
     * Pauses {@code queue} for every engine on the schema: nothing of it is claimed, and none of its scheduled or
     * retryable jobs is promoted, until {@link #resumeQueue(String)}. Enqueues keep being accepted (they wait,
     * counted as available or scheduled), and attempts already running finish and record their outcomes as usual.
     * Emits true when the queue was running and is paused now, false when it was paused already. A pause takes
     * effect for claims that start after it commits; a claim already running may still hand out its batch.
     * Errors with {@link InvalidJobException} for an invalid queue name. Cold.
     */
    public Mono<Boolean> pauseQueue(String queue) {
        Objects.requireNonNull(queue, "queue");
        return Mono.defer(() -> {
            NewJob.checkName("queue", queue);
            return db.query("queue_pause", st -> st.bind("$1", queue).bind("$2", applicationName),
                            row -> Boolean.TRUE.equals(row.get("changed", Boolean.class)))
                    .single()
                    .retryWhen(ON_CONFLICT);
        });
    }

    /**
     * Resumes a paused {@code queue} and wakes its subscribers on every engine at once (the queue's wake-up
     * NOTIFY, sent even when the queue was not paused); due scheduled jobs are promoted on the next promotion
     * tick. Emits true when the queue was paused, false otherwise. Errors with {@link InvalidJobException} for an
     * invalid queue name. Cold.
     */
    public Mono<Boolean> resumeQueue(String queue) {
        Objects.requireNonNull(queue, "queue");
        return Mono.defer(() -> {
            NewJob.checkName("queue", queue);
            return db.query("queue_resume", st -> st.bind("$1", queue),
                            row -> Boolean.TRUE.equals(row.get("changed", Boolean.class)))
                    .single()
                    .retryWhen(ON_CONFLICT);
        });
    }

    /**
     * Cancels a job wherever it is: an unclaimed ready job is tombstoned and never delivered; a scheduled or
     * retryable job leaves the backlog; a running job's attempt is closed (its later completion is rejected as
     * stale) and its worker is signalled.
     */
    public Mono<CancelResult> cancel(long jobId) {
        return db.query("cancel", st -> st.bind("$1", jobId), row -> row.get("result", String.class))
                .single()
                .retryWhen(ON_CONFLICT)
                .map(RiffleAdmin::cancelResult);
    }

    private static CancelResult cancelResult(String r) {
        return switch (r) {
            case "available" -> CancelResult.CANCELLED_AVAILABLE;
            case "scheduled" -> CancelResult.CANCELLED_SCHEDULED;
            case "running" -> CancelResult.CANCELLED_RUNNING;
            default -> CancelResult.NOT_FOUND;
        };
    }

    /**
     * Cancels the job holding the unique key that {@code job} would claim (docs/unique-jobs.md): the key is derived
     * from the job's kind, queue, args and {@link NewJob#unique() unique options} exactly as enqueue derives it
     * (with a period, the current bucket of the database clock). The holder is cancelled as {@link #cancel(long)}
     * does, and the key is released in the same transaction, so the next enqueue with that key creates a job.
     * {@link CancelResult#NOT_FOUND} when no job holds the key.
     *
     * @throws InvalidJobException when {@code job} has no unique options
     */
    public Mono<CancelResult> cancelByUniqueKey(NewJob job) {
        return Mono.defer(() -> {
            Objects.requireNonNull(job, "job");
            if (job.unique() == null) {
                throw new InvalidJobException("unique", "the job has no unique options: nothing names a key");
            }
            UniqueParams p = UniqueParams.of(job.unique());
            return db.query("cancel_unique", st -> {
                        st.bind("$1", job.kind()).bind("$2", job.queue()).bind("$3", job.argsJson());
                        bindOrNull(st, "$4", p.fieldsJson(), String.class);
                        bindOrNull(st, "$5", p.key(), String.class);
                        bindOrNull(st, "$6", p.periodMs(), Long.class);
                    }, row -> row.get("result", String.class))
                    .single()
                    .retryWhen(ON_CONFLICT)
                    .map(RiffleAdmin::cancelResult);
        });
    }

    /**
     * Cancels the job holding the explicit unique key {@code key} of kind {@code kind} ({@link UniqueOptions#byKey},
     * without a period); see {@link #cancelByUniqueKey(NewJob)}.
     */
    public Mono<CancelResult> cancelByUniqueKey(String kind, String key) {
        return Mono.defer(() -> cancelByUniqueKey(NewJob.builder(kind).unique(UniqueOptions.byKey(key)).build()));
    }

    private static <T> void bindOrNull(io.r2dbc.spi.Statement st, String name, @Nullable T value, Class<T> type) {
        if (value == null) {
            st.bindNull(name, type);
        } else {
            st.bind(name, value);
        }
    }

    /**
     * The latest progress checkpoint of a job: the running attempt's, or the one carried in its payload after a
     * retry. Empty when none was recorded.
     */
    public Mono<java.util.Optional<String>> progress(long jobId) {
        return db.query("progress", st -> st.bind("$1", jobId),
                        row -> java.util.Optional.ofNullable(row.get("progress", String.class)))
                .next()
                .retryWhen(ON_CONFLICT)
                .defaultIfEmpty(java.util.Optional.empty());
    }

    /**
     * The job with this id, wherever it lives: ready, running (or parked on a callback), scheduled or retryable in
     * the backlog, terminal history (completed, failed, cancelled) or the DLQ; with its attempts, its error history
     * (message, exception class, stack trace, attempt, time) and its latest progress. Empty for an unknown id, and
     * for a job whose terminal history has been pruned with its queue slot (kept at least
     * {@code MaintenanceConfig.historyRetention}). One statement, so every place is read in one snapshot; the
     * schema decides the state (SQL {@code job_lookup}). A cold admin read: it scans the claim and completion
     * batches of the job's queue slots, so keep it off dispatch paths.
     */
    public Mono<JobInfo> job(long jobId) {
        return db.query("job", st -> st.bind("$1", jobId), RiffleAdmin::jobInfo)
                .collectList()
                .retryWhen(ON_CONFLICT)
                .flatMap(rows -> rows.isEmpty() ? Mono.empty() : Mono.just(rows.get(0)));
    }

    private static JobInfo jobInfo(io.r2dbc.spi.Readable row) {
        String[] messages = row.get("error_messages", String[].class);
        String[] classes = row.get("error_classes", String[].class);
        String[] traces = row.get("error_traces", String[].class);
        Integer[] attempts = row.get("error_attempts", Integer[].class);
        Long[] ats = row.get("error_at_micros", Long[].class);
        List<JobError> errors = new java.util.ArrayList<>(messages == null ? 0 : messages.length);
        for (int i = 0; messages != null && i < messages.length; i++) {
            long micros = ats[i] == null ? 0 : ats[i];
            errors.add(new JobError(messages[i] == null ? "" : messages[i], classes[i], traces[i],
                    attempts[i] == null ? 0 : attempts[i],
                    Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L)));
        }
        return new JobInfo(row.get("job_id", Long.class), state(row.get("state", String.class)),
                row.get("kind", String.class), row.get("queue", String.class), row.get("args", String.class),
                row.get("priority", Integer.class), row.get("attempt", Integer.class),
                row.get("max_attempts", Integer.class), row.get("run_lease", Long.class),
                instant(row.get("run_at", OffsetDateTime.class)), row.get("created_at", OffsetDateTime.class).toInstant(),
                instant(row.get("attempted_at", OffsetDateTime.class)),
                instant(row.get("finalized_at", OffsetDateTime.class)), row.get("progress", String.class),
                row.get("dlq_reason", String.class), errors);
    }

    private static @org.jspecify.annotations.Nullable Instant instant(@org.jspecify.annotations.Nullable OffsetDateTime t) {
        return t == null ? null : t.toInstant();
    }

    /** The schema's word for a state (job_lookup's vocabulary); an unknown word is a contract break, said loudly. */
    private static JobState state(String word) {
        return switch (word) {
            case "scheduled" -> JobState.SCHEDULED;
            case "available" -> JobState.AVAILABLE;
            case "running" -> JobState.RUNNING;
            case "waiting_external" -> JobState.WAITING_EXTERNAL;
            case "retryable" -> JobState.RETRYABLE;
            case "completed" -> JobState.COMPLETED;
            case "failed" -> JobState.FAILED;
            case "cancelled" -> JobState.CANCELLED;
            case "dlq" -> JobState.DLQ;
            default -> throw new IllegalStateException("job_lookup returned an unknown state '" + word + "'");
        };
    }

    /** The schema's word for {@code state}: the inverse of {@link #state(String)}. */
    private static String word(JobState state) {
        return state.name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * The newest jobs with an id below {@code beforeJobId}, optionally only of one queue, one kind and one state,
     * newest first; each resolved exactly as {@link #job(long)} resolves it. Keyset paging: pass the page's
     * {@link JobPage#nextBeforeJobId()} for the next, older page ({@code beforeJobId} 0 starts at the newest job).
     * Bounded: without a state at most {@code limit} candidates are looked up; with one, at most
     * {@value #SEARCH_SCAN_FACTOR} times as many (at most {@value #MAX_SEARCH_SCAN}), so a page can come back short
     * or empty and still have {@link JobPage#hasMore() more} behind it. Jobs whose terminal history was pruned are not
     * found. Errors with {@link InvalidJobException} for an invalid queue or kind name, a negative
     * {@code beforeJobId} or a limit outside 1..{@value #MAX_SEARCH}. A cold admin read (SQL {@code job_search}).
     *
     * @param queue only jobs of this queue, or null for any
     * @param kind only jobs of this kind, or null for any
     * @param state only jobs in this state, or null for any
     */
    public Mono<JobPage> searchJobs(@Nullable String queue, @Nullable String kind, @Nullable JobState state,
                                    long beforeJobId, int limit) {
        return Mono.defer(() -> {
            if (queue != null) {
                NewJob.checkName("queue", queue);
            }
            if (kind != null) {
                NewJob.checkName("kind", kind);
            }
            if (beforeJobId < 0) {
                throw new InvalidJobException("beforeJobId", "must be 0 (newest) or a job id, got " + beforeJobId);
            }
            if (limit < 1 || limit > MAX_SEARCH) {
                throw new InvalidJobException("limit", "must be between 1 and " + MAX_SEARCH + ", got " + limit);
            }
            // The backlog and the DLQ are read by state already; only the ready-ring states are told apart by
            // job_lookup after the scan, so only they need the wider window.
            boolean filteredAfterScan = state != null && state != JobState.DLQ && state != JobState.SCHEDULED
                    && state != JobState.RETRYABLE;
            int scan = filteredAfterScan ? Math.min(MAX_SEARCH_SCAN, limit * SEARCH_SCAN_FACTOR) : limit;
            long before = beforeJobId == 0 ? Long.MAX_VALUE : beforeJobId;
            return db.query("job_search", st -> {
                        bindOrNull(st, "$1", queue, String.class);
                        bindOrNull(st, "$2", kind, String.class);
                        bindOrNull(st, "$3", state == null ? null : word(state), String.class);
                        st.bind("$4", before).bind("$5", scan).bind("$6", limit);
                    }, row -> new SearchRow(row.get("scan_floor", Long.class),
                            Boolean.TRUE.equals(row.get("scan_full", Boolean.class)),
                            row.get("job_id", Long.class) == null ? null : jobInfo(row)))
                    .collectList()
                    .retryWhen(ON_CONFLICT)
                    .map(rows -> page(rows, limit));
        });
    }

    private record SearchRow(@Nullable Long scanFloor, boolean scanFull, @Nullable JobInfo job) {}

    private static JobPage page(List<SearchRow> rows, int limit) {
        List<JobInfo> jobs = rows.stream().map(SearchRow::job).filter(Objects::nonNull).toList();
        SearchRow first = rows.get(0);
        long next;
        if (jobs.size() == limit) {
            next = jobs.get(jobs.size() - 1).id();
        } else if (first.scanFull() && first.scanFloor() != null) {
            next = first.scanFloor();
        } else {
            next = 0;
        }
        return new JobPage(jobs, next);
    }

    /**
     * Depth of each of {@code queues} now: available, running, scheduled, DLQ and the age of the oldest available job
     * (the statement the {@code riffle.queue.*} gauges are refreshed with), in no particular order; one statement
     * for all of them. At most {@value #MAX_PAGE} queues. Errors with {@link InvalidJobException} for an invalid
     * queue name. A cold admin read that scans the backlog.
     */
    public Flux<QueueDepth> queueDepths(java.util.Collection<String> queues) {
        Objects.requireNonNull(queues, "queues");
        return Flux.defer(() -> {
            String[] qs = queues.toArray(String[]::new);
            for (String q : qs) {
                NewJob.checkName("queue", q);
            }
            if (qs.length > MAX_PAGE) {
                throw new InvalidJobException("queues", "at most " + MAX_PAGE + " at once, got " + qs.length);
            }
            if (qs.length == 0) {
                return Flux.empty();
            }
            return db.query("meter_queue_gauges", st -> st.bind("$1", qs), row -> {
                        Double age = row.get("oldest_age_seconds", Double.class);
                        return new QueueDepth(row.get("queue", String.class), row.get("available", Long.class),
                                row.get("running", Long.class), row.get("deferred", Long.class),
                                row.get("dlq", Long.class),
                                Duration.ofNanos(Math.round((age == null ? 0 : age) * 1e9)));
                    })
                    .collectList()
                    .retryWhen(ON_CONFLICT)
                    .flatMapIterable(page -> page);
        });
    }

    /**
     * Lists DLQ entries of a queue, by job id, after {@code afterJobId} (0 for the first page). Errors with
     * {@link InvalidJobException} for an invalid queue name or limit.
     */
    public Flux<DlqEntry> listDlq(String queue, long afterJobId, int limit) {
        Objects.requireNonNull(queue, "queue");
        return Flux.defer(() -> {
            NewJob.checkName("queue", queue);
            if (limit < 1 || limit > MAX_PAGE) {
                return Flux.error(new InvalidJobException("limit", "must be between 1 and " + MAX_PAGE + ", got " + limit));
            }
            // Collected before emitting, so a retried page is never emitted twice.
            return db.query("dlq_list", st -> st.bind("$1", queue).bind("$2", afterJobId).bind("$3", limit),
                            row -> new DlqEntry(row.get("job_id", Long.class), row.get("queue", String.class),
                                    row.get("kind", String.class), row.get("args", String.class),
                                    row.get("attempt", Integer.class), row.get("run_lease", Long.class),
                                    row.get("dlq_reason", String.class), row.get("payload", String.class),
                                    row.get("dlq_at", OffsetDateTime.class).toInstant()))
                    .collectList()
                    .retryWhen(ON_CONFLICT)
                    .flatMapIterable(page -> page);
        });
    }

    /**
     * Moves one DLQ entry back to the ready ring (attempt 0, run lease kept); emits true if it existed. Never waits
     * for a producer transaction that holds the job's lane: the entry then leaves the DLQ as a job due at once, which
     * promotion makes ready as soon as the lane is free. True always means the job left the DLQ and will run.
     */
    public Mono<Boolean> retryDlq(long jobId) {
        return retry(List.of(jobId)).map(ids -> !ids.isEmpty());
    }

    /**
     * Retries up to {@value #MAX_PAGE} entries matching {@code filter}; emits the retried ids (each has left the
     * DLQ, as for {@link #retryDlq(long)}).
     */
    public Mono<List<Long>> retryDlq(DlqFilter filter) {
        return match(filter).flatMap(this::retry);
    }

    /** Deletes one DLQ entry permanently; emits true if it existed. */
    public Mono<Boolean> purgeDlq(long jobId) {
        return purge(List.of(jobId)).map(ids -> !ids.isEmpty());
    }

    /** Deletes up to {@value #MAX_PAGE} entries matching {@code filter}; emits the purged ids. */
    public Mono<List<Long>> purgeDlq(DlqFilter filter) {
        return match(filter).flatMap(this::purge);
    }

    private Mono<List<Long>> match(DlqFilter filter) {
        Objects.requireNonNull(filter, "filter");
        return db.query("dlq_match", st -> {
            if (filter.queue() == null) {
                st.bindNull("$1", String.class);
            } else {
                st.bind("$1", filter.queue());
            }
            if (filter.kind() == null) {
                st.bindNull("$2", String.class);
            } else {
                st.bind("$2", filter.kind());
            }
            st.bind("$3", MAX_PAGE);
        }, row -> row.get("job_id", Long.class)).collectList().retryWhen(ON_CONFLICT);
    }

    private Mono<List<Long>> retry(List<Long> ids) {
        if (ids.isEmpty()) {
            return Mono.just(List.of());
        }
        Long[] arr = ids.toArray(Long[]::new);
        return db.query("dlq_retry", st -> st.bind("$1", arr), row -> row.get("job_id", Long.class)).collectList()
                .retryWhen(ON_CONFLICT);
    }

    private Mono<List<Long>> purge(List<Long> ids) {
        if (ids.isEmpty()) {
            return Mono.just(List.of());
        }
        Long[] arr = ids.toArray(Long[]::new);
        return db.query("dlq_purge", st -> st.bind("$1", arr), row -> row.get("job_id", Long.class)).collectList()
                .retryWhen(ON_CONFLICT);
    }
}
