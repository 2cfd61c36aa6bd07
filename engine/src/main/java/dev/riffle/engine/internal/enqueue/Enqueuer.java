package dev.riffle.engine.internal.enqueue;

import dev.riffle.engine.api.ArgsCodec;
import dev.riffle.engine.api.EnqueueResult;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobClient;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.sql.Db;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Enqueue (docs/design/delivery-contract.md): validates at the edge, then one {@code enqueue_jobs} statement per batch,
 * on a pooled connection or on the caller's own connection for transactional enqueue.
 */
public final class Enqueuer implements JobClient {

    /** Largest batch accepted in one call; bigger batches should be split by the caller. */
    public static final int MAX_BATCH = 10_000;

    private final Db db;
    private final int maxArgsBytes;
    private final @Nullable ArgsCodec codec;

    /** Creates the enqueuer; {@code codec} encodes typed args (null: typed args are refused). */
    public Enqueuer(Db db, int maxArgsBytes, @Nullable ArgsCodec codec) {
        this.db = db;
        this.maxArgsBytes = maxArgsBytes;
        this.codec = codec;
    }

    @Override
    public Mono<Long> enqueue(NewJob job) {
        return enqueueMany(List.of(Objects.requireNonNull(job, "job"))).map(ids -> ids.get(0));
    }

    @Override
    public Mono<List<Long>> enqueueMany(List<NewJob> jobs) {
        return enqueueManyWithResult(jobs).map(Enqueuer::ids);
    }

    @Override
    public Mono<Long> enqueue(Connection connection, NewJob job) {
        return enqueueMany(connection, List.of(Objects.requireNonNull(job, "job"))).map(ids -> ids.get(0));
    }

    @Override
    public Mono<List<Long>> enqueueMany(Connection connection, List<NewJob> jobs) {
        return enqueueManyWithResult(connection, jobs).map(Enqueuer::ids);
    }

    @Override
    public Mono<EnqueueResult> enqueueWithResult(NewJob job) {
        return enqueueManyWithResult(List.of(Objects.requireNonNull(job, "job"))).map(r -> r.get(0));
    }

    @Override
    public Mono<List<EnqueueResult>> enqueueManyWithResult(List<NewJob> jobs) {
        return Mono.defer(() -> {
            List<NewJob> encoded = validate(jobs);
            return Mono.usingWhen(db.pool().create(), c -> run(c, encoded), Connection::close);
        });
    }

    @Override
    public Mono<EnqueueResult> enqueueWithResult(Connection connection, NewJob job) {
        return enqueueManyWithResult(connection, List.of(Objects.requireNonNull(job, "job"))).map(r -> r.get(0));
    }

    @Override
    public Mono<List<EnqueueResult>> enqueueManyWithResult(Connection connection, List<NewJob> jobs) {
        Objects.requireNonNull(connection, "connection");
        return Mono.defer(() -> {
            List<NewJob> encoded = validate(jobs);
            return run(connection, encoded);
        });
    }

    private static List<Long> ids(List<EnqueueResult> results) {
        List<Long> ids = new ArrayList<>(results.size());
        for (EnqueueResult r : results) {
            ids.add(r.jobId());
        }
        return ids;
    }

    /** Checks the batch and encodes typed args; returns the jobs as they are sent (JSON args only). */
    private List<NewJob> validate(List<NewJob> jobs) {
        if (jobs == null) {
            throw new InvalidJobException("jobs", "must not be null");
        }
        if (jobs.isEmpty() || jobs.size() > MAX_BATCH) {
            throw new InvalidJobException("jobs", "batch size must be between 1 and " + MAX_BATCH + ", got " + jobs.size());
        }
        List<NewJob> out = new java.util.ArrayList<>(jobs.size());
        for (NewJob given : jobs) {
            if (given == null) {
                throw new InvalidJobException("jobs", "must not contain null");
            }
            NewJob j = encode(given);
            out.add(j);
            // Cheap upper bound first: a UTF-8 character is at most 3 bytes per UTF-16 unit.
            if ((long) j.argsJson().length() * 3 > maxArgsBytes
                    && j.argsJson().getBytes(StandardCharsets.UTF_8).length > maxArgsBytes) {
                throw new InvalidJobException("args", "is " + j.argsJson().getBytes(StandardCharsets.UTF_8).length
                        + " bytes, larger than the limit of " + maxArgsBytes + " bytes");
            }
        }
        return out;
    }

    private NewJob encode(NewJob j) {
        if (j.typedArgs() == null) {
            return j;
        }
        if (codec == null) {
            throw new InvalidJobException("args", "typed args need an args codec: set RiffleConfig.Builder.argsCodec(...)"
                    + " (e.g. dev.riffle:riffle-jackson), or pass JSON with args(String)");
        }
        return j.encodeArgs(codec);
    }

    private Mono<List<EnqueueResult>> run(Connection c, List<NewJob> jobs) {
        int n = jobs.size();
        boolean anyUnique = false;
        for (NewJob j : jobs) {
            anyUnique |= j.unique() != null;
        }
        String[] queues = new String[n];
        String[] kinds = new String[n];
        String[] args = new String[n];
        Integer[] prios = new Integer[n];
        Integer[] maxAttempts = new Integer[n];
        String[] runAts = new String[n];
        for (int i = 0; i < n; i++) {
            NewJob j = jobs.get(i);
            queues[i] = j.queue();
            kinds[i] = j.kind();
            args[i] = j.argsJson();
            prios[i] = j.priority();
            maxAttempts[i] = j.maxAttempts();
            runAts[i] = j.runAt() == null ? null : j.runAt().toString();
        }
        Flux<EnqueueResult> rows;
        if (!anyUnique) {
            // Jobs without unique options never reach job_unique_claims (docs/adr/0012).
            rows = db.query(c, "enqueue", (Statement st) -> st
                            .bind("$1", queues).bind("$2", kinds).bind("$3", args).bind("$4", prios)
                            .bind("$5", maxAttempts).bind("$6", runAts),
                    row -> new EnqueueResult(row.get("job_id", Long.class), false));
        } else {
            String[] fields = new String[n];
            String[] keys = new String[n];
            Long[] periods = new Long[n];
            String[] states = new String[n];
            for (int i = 0; i < n; i++) {
                UniqueOptions u = jobs.get(i).unique();
                if (u != null) {
                    UniqueParams p = UniqueParams.of(u);
                    fields[i] = p.fieldsJson();
                    keys[i] = p.key();
                    periods[i] = p.periodMs();
                    states[i] = p.states();
                }
            }
            rows = db.query(c, "enqueue_unique", (Statement st) -> st
                            .bind("$1", queues).bind("$2", kinds).bind("$3", args).bind("$4", prios)
                            .bind("$5", maxAttempts).bind("$6", runAts).bind("$7", fields).bind("$8", keys)
                            .bind("$9", periods).bind("$10", states),
                    row -> new EnqueueResult(row.get("job_id", Long.class),
                            Boolean.TRUE.equals(row.get("duplicate", Boolean.class))));
        }
        return rows
                .collectList()
                // Class 22 (data exception: what jsonb cannot store, such as \u0000 or numeric overflow; NewJob
                // already checked the syntax) and CHECK violations are the input's fault; say so with the typed
                // error. Nothing was written: the statement failed whole. On the caller's connection its
                // transaction is aborted all the same (JobClient says so), which is why NewJob checks the syntax.
                .onErrorMap(e -> Db.isDataException(e) || "23514".equals(Db.sqlState(e)), Enqueuer::rejected);
    }

    private static InvalidJobException rejected(Throwable e) {
        if (!"23514".equals(Db.sqlState(e))) {
            return new InvalidJobException("args", "rejected by the database: " + e.getMessage(), e);
        }
        String constraint = Db.constraintName(e);
        // NewJob checks the same run_at range, so this fires only for what it could not see: the database keeps
        // microseconds and rounds, so an instant within half a microsecond below the upper bound lands on it.
        if (constraint != null && constraint.endsWith("_run_at")) {
            return new InvalidJobException("runAt", NewJob.runAtRange() + " once rounded to the database's "
                    + "microseconds; the database refused it (" + constraint + ")", e);
        }
        return new InvalidJobException("jobs", "rejected by the database: " + e.getMessage(), e);
    }
}
