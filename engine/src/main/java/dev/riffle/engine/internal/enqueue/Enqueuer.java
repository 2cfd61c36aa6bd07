package dev.riffle.engine.internal.enqueue;

import dev.riffle.engine.api.ArgsCodec;
import dev.riffle.engine.api.EnqueueResult;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobClient;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.internal.tracing.JobTracing;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Statement;
import io.r2dbc.spi.Wrapped;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Enqueue (docs/design/delivery-contract.md): validates at the edge, then one {@code enqueue_jobs} statement per batch,
 * on a pooled connection or on the caller's own connection for transactional enqueue. A batch of at least
 * {@code copyThreshold} jobs without unique options is staged with {@code COPY} into a session temporary table and
 * handed to the same {@code enqueue_jobs} in one statement (docs/bulk-enqueue.md).
 */
public final class Enqueuer implements JobClient {

    /** Largest batch accepted in one call; bigger batches should be split by the caller. */
    public static final int MAX_BATCH = 10_000;

    /** Characters of COPY text per {@code CopyData} message, about (a row is never split across two). */
    static final int COPY_CHUNK_CHARS = 256 * 1024;

    /**
     * Staging keys, unique in this process: the staging table is per session and shared by every engine on it, and
     * a caller may run two batches on one connection in one transaction.
     */
    private static final AtomicLong STAGING_BATCHES = new AtomicLong();

    private final Db db;
    private final int maxArgsBytes;
    private final @Nullable ArgsCodec codec;
    private final int copyThreshold;
    private final JobTracing tracing;

    /**
     * Creates the enqueuer; {@code codec} encodes typed args (null: typed args are refused); batches of at least
     * {@code copyThreshold} jobs take the COPY path (0: never).
     */
    public Enqueuer(Db db, int maxArgsBytes, @Nullable ArgsCodec codec, int copyThreshold) {
        this(db, maxArgsBytes, codec, copyThreshold, JobTracing.NONE);
    }

    /** As above, each batch observed by {@code tracing}, which also gives the trace context stored with its jobs. */
    public Enqueuer(Db db, int maxArgsBytes, @Nullable ArgsCodec codec, int copyThreshold, JobTracing tracing) {
        this.db = db;
        this.maxArgsBytes = maxArgsBytes;
        this.codec = codec;
        this.copyThreshold = copyThreshold;
        this.tracing = tracing;
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
            return tracing.enqueue(encoded, trace ->
                    Mono.usingWhen(db.pool().create(), c -> run(c, encoded, trace), Connection::close));
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
            return tracing.enqueue(encoded, trace -> run(connection, encoded, trace));
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

    /** One batch on {@code c}; {@code trace} (JSON, or null) is the trace context stored with its jobs. */
    private Mono<List<EnqueueResult>> run(Connection c, List<NewJob> jobs, @Nullable String trace) {
        int n = jobs.size();
        boolean anyUnique = false;
        for (NewJob j : jobs) {
            anyUnique |= j.unique() != null;
        }
        if (!anyUnique && copyThreshold > 0 && n >= copyThreshold) {
            PostgresqlConnection pg = postgres(c);
            if (pg != null) {
                return copy(c, pg, jobs, trace).onErrorMap(e -> Db.isDataException(e) || "23514".equals(Db.sqlState(e)),
                        Enqueuer::rejected);
            }
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
            rows = db.query(c, "enqueue", (Statement st) -> bindTrace(st
                            .bind("$1", queues).bind("$2", kinds).bind("$3", args).bind("$4", prios)
                            .bind("$5", maxAttempts).bind("$6", runAts), "$7", trace),
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
            rows = db.query(c, "enqueue_unique", (Statement st) -> bindTrace(st
                            .bind("$1", queues).bind("$2", kinds).bind("$3", args).bind("$4", prios)
                            .bind("$5", maxAttempts).bind("$6", runAts).bind("$7", fields).bind("$8", keys)
                            .bind("$9", periods).bind("$10", states), "$11", trace),
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

    /** Binds the trace context: JSON text, or NULL (nothing stored: the payload stays NULL, as without tracing). */
    private static Statement bindTrace(Statement st, String name, @Nullable String trace) {
        return trace != null ? st.bind(name, trace) : st.bindNull(name, String.class);
    }

    /**
     * The driver's connection under {@code c} (an r2dbc-pool connection, or another {@link Wrapped} decorator,
     * unwrapped), or null when there is none: then the batch takes the array path.
     */
    static @Nullable PostgresqlConnection postgres(Connection c) {
        Object x = c;
        for (int depth = 0; depth < 8 && x != null; depth++) {
            if (x instanceof PostgresqlConnection pg) {
                return pg;
            }
            Object inner = x instanceof Wrapped<?> w ? w.unwrap() : null;
            x = inner == x ? null : inner;
        }
        return null;
    }

    /**
     * The COPY path (docs/bulk-enqueue.md): create the session's staging table if needed, COPY the rows in, then one
     * {@code enqueue_staged} statement runs {@code enqueue_jobs} over them. The staging table empties itself at the
     * end of the transaction, so the three steps must share one: the caller's open transaction if there is one,
     * else one begun and ended here (committed on success, rolled back on error or cancel), which keeps a batch
     * all-or-nothing as the array path's single statement is. {@code c} drives the transaction (a pool's
     * connection knows its own state), {@code pg} is the driver's connection under it, for the COPY.
     */
    private Mono<List<EnqueueResult>> copy(Connection c, PostgresqlConnection pg, List<NewJob> jobs,
                                           @Nullable String trace) {
        return Mono.defer(() -> {
            long batch = STAGING_BATCHES.incrementAndGet();
            Mono<List<EnqueueResult>> steps = Flux.from(c.createStatement(db.sql().get("enqueue_staging_create")).execute())
                    .concatMap(r -> r.getRowsUpdated())
                    .then(pg.copyIn(db.sql().get("enqueue_staging_copy")).fromMany(copyRows(batch, jobs)).build())
                    .flatMap(copied -> db.query(c, "enqueue_staged",
                                    (Statement st) -> bindTrace(st.bind("$1", batch), "$2", trace),
                                    row -> new EnqueueResult(row.get("job_id", Long.class), false))
                            .collectList()
                            .map(ids -> {
                                if (copied != jobs.size() || ids.size() != jobs.size()) {
                                    throw new IllegalStateException("COPY enqueue of " + jobs.size() + " jobs staged "
                                            + copied + " rows and enqueued " + ids.size());
                                }
                                return ids;
                            }));
            if (!c.isAutoCommit()) {
                return steps;
            }
            return Mono.usingWhen(Mono.from(c.beginTransaction()).thenReturn(c), tx -> steps,
                    Connection::commitTransaction, (tx, e) -> tx.rollbackTransaction(), Connection::rollbackTransaction);
        });
    }

    /** The batch as COPY text rows, in {@code CopyData} messages of about {@link #COPY_CHUNK_CHARS} each. Lazy. */
    private static Flux<Publisher<ByteBuf>> copyRows(long batch, List<NewJob> jobs) {
        int n = jobs.size();
        return Flux.generate(() -> 0, (from, sink) -> {
            if (from >= n) {
                sink.complete();
                return from;
            }
            int to = from;
            long chars = 0;
            while (to < n && chars < COPY_CHUNK_CHARS) {
                NewJob j = jobs.get(to++);
                chars += j.argsJson().length() + j.queue().length() + j.kind().length() + 64;
            }
            int first = from;
            int end = to;
            long size = chars;
            sink.next(Mono.fromSupplier(() -> {
                StringBuilder sb = new StringBuilder((int) Math.min(Integer.MAX_VALUE - 16, size + size / 8));
                for (int i = first; i < end; i++) {
                    appendRow(sb, batch, i, jobs.get(i));
                }
                return Unpooled.wrappedBuffer(sb.toString().getBytes(StandardCharsets.UTF_8));
            }));
            return to;
        });
    }

    /** One row of {@code enqueue_staging_copy}, COPY text format: tab-separated, escaped, {@code \N} for null. */
    static void appendRow(StringBuilder sb, long batch, int ord, NewJob j) {
        sb.append(batch).append('\t').append(ord).append('\t');
        appendCopyText(sb, j.queue());
        sb.append('\t');
        appendCopyText(sb, j.kind());
        sb.append('\t');
        appendCopyText(sb, j.argsJson());
        sb.append('\t').append(j.priority()).append('\t').append(j.maxAttempts()).append('\t');
        if (j.runAt() == null) {
            sb.append("\\N");
        } else {
            // The array path sends the same ISO-8601 text for the same timestamptz input function to read.
            sb.append(j.runAt().toString());
        }
        sb.append('\n');
    }

    /**
     * {@code s} as a COPY text field: backslash, newline, carriage return and tab escaped (JSON may hold all four,
     * the whitespace between tokens raw and backslashes in its string escapes); nothing else is special.
     */
    static void appendCopyText(StringBuilder sb, String s) {
        for (int k = 0; k < s.length(); k++) {
            char ch = s.charAt(k);
            switch (ch) {
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> sb.append(ch);
            }
        }
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
