package dev.riffle.examples;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.RiffleStats;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The Riffle quick start: enqueue a batch of jobs, drain them through one reactive subscription, and show what the
 * engine wrote to the database while doing it.
 *
 * <p>Run it with {@code mvn -pl examples exec:java}. Without {@value ExampleDatabase#URL_ENV} it starts an embedded
 * PostgreSQL; with it, it uses that database. Either way it drops and recreates the schema
 * {@value #DEFAULT_SCHEMA}, so every run starts from nothing. Flags: {@code --jobs N} (default
 * {@value #DEFAULT_JOBS}), {@code --concurrency N} (default {@value #DEFAULT_CONCURRENCY}), {@code --work-ms N}
 * (simulated non-blocking work per job, default 0), {@code --maintenance on|off} (default off, see
 * {@link Options#maintenance()}).
 *
 * <p>The process exits with status 0 only when every enqueued job was completed exactly once.
 */
public final class QuickStart {

    /** The schema the quick start owns; it is dropped at every start. */
    public static final String DEFAULT_SCHEMA = "riffle_quickstart";
    /** The queue the quick start uses. */
    public static final String QUEUE = "quickstart";
    /** Default number of jobs. */
    public static final int DEFAULT_JOBS = 10_000;
    /** Default handler concurrency: how many jobs are being handled (and so requested) at once. */
    public static final int DEFAULT_CONCURRENCY = 64;
    /** Jobs per {@code enqueueMany} call. */
    public static final int ENQUEUE_BATCH = 1_000;

    // No completion for this long means something is stuck; report what is missing instead of hanging.
    private static final Duration IDLE_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration START_TIMEOUT = Duration.ofMinutes(3);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(60);

    private QuickStart() {}

    /**
     * What to run.
     *
     * @param jobs how many jobs to enqueue and drain (1..10,000,000)
     * @param concurrency the {@code flatMap} concurrency of the subscriber (1..10,000)
     * @param workMillis simulated non-blocking work per job, in milliseconds (0 for none)
     * @param maintenance run the maintenance leader (ring rotation and prune) during the run. Off by default: prune
     *     truncates finished ring segments within seconds, and the batch tables would then show only what is
     *     still retained rather than what the run wrote. A real deployment always runs maintenance somewhere.
     * @param schema the Riffle schema to (re)create
     * @param url database URL; {@code null} means {@value ExampleDatabase#URL_ENV} or an embedded server
     */
    public record Options(int jobs, int concurrency, int workMillis, boolean maintenance, String schema,
                          @Nullable String url) {

        /** Validates the ranges. */
        public Options {
            requireRange("--jobs", jobs, 1, 10_000_000);
            requireRange("--concurrency", concurrency, 1, 10_000);
            requireRange("--work-ms", workMillis, 0, 60_000);
            Objects.requireNonNull(schema, "schema");
        }

        /** The defaults: {@value #DEFAULT_JOBS} jobs, concurrency {@value #DEFAULT_CONCURRENCY}, no work. */
        public static Options defaults() {
            return new Options(DEFAULT_JOBS, DEFAULT_CONCURRENCY, 0, false, DEFAULT_SCHEMA, null);
        }

        /**
         * Parses {@code --jobs N}, {@code --concurrency N}, {@code --work-ms N} and {@code --maintenance on|off}
         * (also as {@code --flag=value}).
         *
         * @throws IllegalArgumentException naming the flag when an argument is unknown or out of range
         */
        public static Options parse(String... args) {
            Options o = defaults();
            for (Flags.Flag f : Flags.parse(args)) {
                String flag = f.name();
                String value = f.value();
                o = switch (flag) {
                    case "--jobs" -> new Options(parseInt(flag, value), o.concurrency, o.workMillis, o.maintenance,
                            o.schema, o.url);
                    case "--concurrency" -> new Options(o.jobs, parseInt(flag, value), o.workMillis, o.maintenance,
                            o.schema, o.url);
                    case "--work-ms" -> new Options(o.jobs, o.concurrency, parseInt(flag, value), o.maintenance,
                            o.schema, o.url);
                    case "--maintenance" -> new Options(o.jobs, o.concurrency, o.workMillis, parseOnOff(flag, value),
                            o.schema, o.url);
                    default -> throw new IllegalArgumentException("unknown flag " + flag);
                };
            }
            return o;
        }

        /** The same options against another database and schema (tests use this instead of the environment). */
        public Options on(String otherUrl, String otherSchema) {
            return new Options(jobs, concurrency, workMillis, maintenance, otherSchema, otherUrl);
        }

        private static boolean parseOnOff(String flag, String value) {
            return switch (value) {
                case "on", "true" -> true;
                case "off", "false" -> false;
                default -> throw new IllegalArgumentException(flag + " needs on or off, got '" + value + "'");
            };
        }

        private static int parseInt(String flag, String value) {
            try {
                return Integer.parseInt(value.replace("_", ""));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(flag + " needs a whole number, got '" + value + "'");
            }
        }

        private static void requireRange(String flag, int v, int min, int max) {
            if (v < min || v > max) {
                throw new IllegalArgumentException(flag + " must be between " + min + " and " + max + ", got " + v);
            }
        }
    }

    /**
     * What a run observed.
     *
     * @param enqueued jobs enqueued
     * @param completed distinct jobs whose completion committed
     * @param notExactlyOnce enqueued jobs completed zero times or more than once, plus completions of ids that were
     *     never enqueued; 0 on a correct run
     * @param rejectedCompletions completions the engine refused as already closed or stale
     * @param drainFailure why draining stopped early, or {@code null}
     * @param wallTime from the subscription's start to the last completion
     * @param claimBatches rows in {@code lease_claim_batches}
     * @param closureBatches rows in {@code lease_claim_closure_batches}
     * @param completionBatches rows in {@code receipt_completion_batches}
     * @param stats the engine's in-process counters at the end
     * @param counts the queue's counts at the end
     */
    public record Result(int enqueued, int completed, int notExactlyOnce, long rejectedCompletions,
                         @Nullable String drainFailure, Duration wallTime, long claimBatches, long closureBatches,
                         long completionBatches, RiffleStats stats, QueueCounts counts) {

        /** True when every enqueued job was completed exactly once and nothing else went wrong. */
        public boolean ok() {
            return drainFailure == null && notExactlyOnce == 0 && completed == enqueued;
        }

        /** Completed jobs per second of wall time. */
        public double jobsPerSecond() {
            double seconds = wallTime.toNanos() / 1e9;
            return seconds <= 0 ? 0 : completed / seconds;
        }
    }

    /** Runs the quick start; exits non-zero when a job was not completed exactly once or the run failed. */
    public static void main(String[] args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("quick start: " + e.getMessage());
            System.err.println("usage: QuickStart [--jobs N] [--concurrency N] [--work-ms N] [--maintenance on|off]");
            System.exit(2);
            return;
        }
        Result result;
        try {
            result = run(options, System.out);
        } catch (Exception e) {
            System.err.println("quick start failed: " + e);
            e.printStackTrace();
            System.exit(1);
            return;
        }
        if (!result.ok()) {
            System.exit(1);
        }
        // Success returns normally: every thread the run started is a daemon or already stopped, so the JVM ends.
    }

    /**
     * Runs the quick start, printing progress and the summary to {@code out}. Blocks; call it from a plain thread.
     *
     * @throws SQLException when the schema reset or the end-of-run counts fail
     */
    public static Result run(Options options, PrintStream out) throws SQLException {
        out.printf(Locale.ROOT, "Riffle quick start: %,d jobs, subscriber concurrency %d%s%n", options.jobs(),
                options.concurrency(),
                options.workMillis() == 0 ? "" : ", " + options.workMillis() + " ms work per job");
        try (ExampleDatabase db = ExampleDatabase.open(options.url())) {
            out.println("database: " + db.description());
            db.dropSchemas(options.schema());
            out.println("schema " + options.schema() + ": dropped (if it existed) and recreated by migration, "
                    + "so this run starts clean");
            out.println(options.maintenance()
                    ? "maintenance: on (rotation may prune finished segments, so table counts can be below "
                            + "what was written)"
                    : "maintenance: off for this run, so the batch tables below keep every row the run wrote");

            RiffleConfig config = RiffleConfig.builder()
                    .url(db.url())
                    .schema(options.schema())
                    .migrate(true)
                    .applicationName("riffle-quickstart")
                    .maintenance(MaintenanceConfig.builder().enabled(options.maintenance()).build())
                    .build();
            Riffle riffle = Objects.requireNonNull(Riffle.start(config).block(START_TIMEOUT), "engine");
            try {
                return runWith(riffle, db, options, out);
            } finally {
                riffle.close().block(CLOSE_TIMEOUT);
            }
        }
    }

    private static Result runWith(Riffle riffle, ExampleDatabase db, Options options, PrintStream out)
            throws SQLException {
        int jobs = options.jobs();

        long enqueueStart = System.nanoTime();
        List<Long> ids = Flux.range(0, (jobs + ENQUEUE_BATCH - 1) / ENQUEUE_BATCH)
                // One batch at a time: each is a single statement, and order keeps the ids readable.
                .concatMap(b -> riffle.client().enqueueMany(
                        batch(b * ENQUEUE_BATCH, Math.min(jobs, (b + 1) * ENQUEUE_BATCH))))
                .flatMapIterable(batchIds -> batchIds)
                .collectList()
                .block();
        Duration enqueueTime = Duration.ofNanos(System.nanoTime() - enqueueStart);
        Objects.requireNonNull(ids, "ids");
        out.printf(Locale.ROOT, "enqueued %,d jobs in %d batches of up to %,d in %s%n", ids.size(),
                (jobs + ENQUEUE_BATCH - 1) / ENQUEUE_BATCH, ENQUEUE_BATCH, seconds(enqueueTime));

        Map<Long, AtomicInteger> completions = new ConcurrentHashMap<>();
        AtomicLong rejected = new AtomicLong();
        int concurrency = options.concurrency();
        long drainStart = System.nanoTime();
        AtomicLong lastCompletion = new AtomicLong(drainStart);
        String drainFailure = riffle.subscribe(QUEUE)
                .flatMap(job -> handler(job, options.workMillis())
                        .then(job.complete())
                        .thenReturn(job.id())
                        // A refused completion means another attempt owns the job; count it, keep draining.
                        .onErrorResume(AttemptRejectedException.class, e -> {
                            rejected.incrementAndGet();
                            return Mono.empty();
                        }), concurrency, 1)
                .doOnNext(id -> {
                    completions.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                    lastCompletion.set(System.nanoTime());
                })
                // Ends the subscription, which stops claiming; everything asked for has been delivered by then.
                .take(jobs)
                .timeout(IDLE_TIMEOUT)
                .then(Mono.<String>empty())
                .onErrorResume(e -> Mono.just(e instanceof TimeoutException
                        ? "no completion for " + IDLE_TIMEOUT.toSeconds() + " s"
                        : e.toString()))
                .block();
        Duration wallTime = Duration.ofNanos(lastCompletion.get() - drainStart);

        int notExactlyOnce = 0;
        Set<Long> expected = new HashSet<>(ids);
        for (Long id : ids) {
            AtomicInteger n = completions.get(id);
            if (n == null || n.get() != 1) {
                notExactlyOnce++;
            }
        }
        List<Long> strangers = new ArrayList<>();
        for (Long id : completions.keySet()) {
            if (!expected.contains(id)) {
                strangers.add(id);
            }
        }
        notExactlyOnce += strangers.size();

        long claimBatches;
        long closureBatches;
        long completionBatches;
        // JDBC on the main thread: blocking is fine here, this is not a Reactor thread.
        try (Connection c = db.jdbc()) {
            claimBatches = countRows(c, options.schema(), "lease_claim_batches");
            closureBatches = countRows(c, options.schema(), "lease_claim_closure_batches");
            completionBatches = countRows(c, options.schema(), "receipt_completion_batches");
        }
        RiffleStats stats = riffle.stats();
        QueueCounts counts = Objects.requireNonNull(riffle.counts(QUEUE).block(), "counts");

        Result result = new Result(ids.size(), completions.size(), notExactlyOnce, rejected.get(), drainFailure,
                wallTime, claimBatches, closureBatches, completionBatches, stats, counts);
        print(result, options, out);
        return result;
    }

    /** Stand-in for real work; when asked to take time it waits on a timer, never on the calling thread. */
    private static Mono<Void> handler(Job job, int workMillis) {
        return workMillis == 0 ? Mono.empty() : Mono.delay(Duration.ofMillis(workMillis)).then();
    }

    private static List<NewJob> batch(int fromInclusive, int toExclusive) {
        List<NewJob> batch = new ArrayList<>(toExclusive - fromInclusive);
        for (int i = fromInclusive; i < toExclusive; i++) {
            batch.add(NewJob.builder("quickstart.echo").queue(QUEUE).args("{\"n\":" + i + "}").build());
        }
        return batch;
    }

    private static long countRows(Connection c, String schema, String table) throws SQLException {
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM \"" + schema + "\"." + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void print(Result r, Options options, PrintStream out) {
        out.printf(Locale.ROOT, "jobs completed: %,d of %,d (concurrency %d)%n", r.completed(), r.enqueued(),
                options.concurrency());
        // With maintenance on, pruned rows are gone from the tables, so a per-row average would overstate batching.
        boolean allRowsKept = !options.maintenance();
        out.printf(Locale.ROOT, "wall time: %s%n", seconds(r.wallTime()));
        out.printf(Locale.ROOT, "throughput: %,.0f jobs/s%n", r.jobsPerSecond());
        out.printf(Locale.ROOT, "claim batches written (lease_claim_batches rows): %d%s%n", r.claimBatches(),
                perBatch(allRowsKept, r.completed(), r.claimBatches()));
        out.printf(Locale.ROOT, "completion batches written (lease_claim_closure_batches rows): %d%s%n",
                r.closureBatches(), perBatch(allRowsKept, r.completed(), r.closureBatches()));
        out.printf(Locale.ROOT, "completion history batches written (receipt_completion_batches rows): %d%s%n",
                r.completionBatches(), perBatch(allRowsKept, r.completed(), r.completionBatches()));
        RiffleStats s = r.stats();
        out.printf(Locale.ROOT, "riffle.stats(): claimBatches=%d claimedJobs=%d emptyClaims=%d completionBatches=%d "
                        + "completed=%d closed=%d rejected=%d inFlight=%d listening=%s leader=%s%n", s.claimBatches(),
                s.claimedJobs(), s.emptyClaims(), s.completionBatches(), s.completed(), s.closed(), s.rejected(),
                s.inFlight(), s.listening(), s.leader());
        QueueCounts c = r.counts();
        out.printf(Locale.ROOT, "riffle.counts(%s): available=%d inFlight=%d completed=%d scheduled=%d%n", c.queue(),
                c.available(), c.inFlight(), c.completed(), c.scheduled());
        if (r.rejectedCompletions() > 0) {
            out.printf(Locale.ROOT, "completions refused by the engine: %d%n", r.rejectedCompletions());
        }
        if (r.drainFailure() != null) {
            out.println("draining stopped early: " + r.drainFailure());
        }
        out.println(r.ok()
                ? "OK: every job was completed exactly once"
                : "FAILED: " + r.notExactlyOnce() + " job(s) were not completed exactly once");
    }

    private static String perBatch(boolean allRowsKept, long jobs, long batches) {
        return !allRowsKept || batches == 0
                ? ""
                : String.format(Locale.ROOT, " (~%.0f jobs each)", (double) jobs / batches);
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.2f s", d.toNanos() / 1e9);
    }
}
