package dev.riffle.engine;

import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.enqueue.UniqueParams;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Operator actions: cancel by job id and DLQ management. Every method is cold and runs one transaction per
 * statement. A statement that fails with a deadlock or serialization failure (rolled back whole by the server) is
 * run again after a short backoff, a few times, before the error reaches the caller: an operator should not see a
 * lock conflict with the engine's own traffic as a failed action.
 */
public final class RiffleAdmin {

    /** Largest page of a DLQ listing and largest bulk retry/purge batch. */
    public static final int MAX_PAGE = 1000;

    // About 0.6 s in all (20, 40, 80, 160, 320 ms, with jitter): long enough for the other side of a deadlock to
    // commit, short enough for an interactive call. When it runs out, the last database error is signalled as is.
    private static final Retry ON_CONFLICT = Retry.backoff(5, Duration.ofMillis(20)).maxBackoff(Duration.ofMillis(500))
            .filter(Db::isConflict)
            .onRetryExhaustedThrow((spec, signal) -> signal.failure());

    private final Db db;

    RiffleAdmin(Db db) {
        this.db = db;
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
