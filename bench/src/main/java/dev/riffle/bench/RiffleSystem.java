package dev.riffle.bench;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.RiffleStats;
import dev.riffle.engine.api.JobClient;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/** Adapter from the harness to the Riffle engine. Loaded reflectively by {@link BenchMain}. */
final class RiffleSystem implements QueueSystem {

    static final String QUEUE = "bench";
    static final String KIND = "bench";

    private final BenchConfig cfg;
    private final String schema;
    /** Null: the engine's default maintenance. */
    private final dev.riffle.engine.MaintenanceConfig maintenance;
    private Riffle riffle;
    private JobClient client;
    private Disposable workers;
    private Map<String, Object> lastCounters = Map.of();

    RiffleSystem(BenchConfig cfg) {
        this(cfg, "bench_riffle");
    }

    /** On another schema: a child JVM's unmeasured warm-up (WorkerMain). */
    RiffleSystem(BenchConfig cfg, String schema) {
        this(cfg, schema, null);
    }

    /** With its own maintenance settings: the validation's crash run (fast rescue, rotation and prune). */
    RiffleSystem(BenchConfig cfg, String schema, dev.riffle.engine.MaintenanceConfig maintenance) {
        this.cfg = cfg;
        this.schema = schema;
        this.maintenance = maintenance;
    }

    /** The running engine (after {@link #open}, before {@link #close}). */
    Riffle engine() {
        if (riffle == null) {
            throw new IllegalStateException("not open");
        }
        return riffle;
    }

    @Override
    public String name() {
        return "riffle";
    }

    @Override
    public String schema() {
        return schema;
    }

    @Override
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        RiffleConfig c = config(false);
        m.put("driver", "r2dbc-postgresql through the Riffle engine");
        m.put("pool_size", c.poolSize());
        m.put("warm_pool", c.warmPool());
        m.put("claim_concurrency", c.claimConcurrency());
        m.put("max_claim_batch", c.maxClaimBatch());
        m.put("completion_batch_size", c.completionBatchSize());
        m.put("copy_enqueue_threshold", c.copyEnqueueThreshold());
        m.put("completion_window_ms", c.completionWindow().toMillis());
        m.put("completion_flush_concurrency", c.completionFlushConcurrency());
        m.put("poll_interval_ms", c.pollInterval().toMillis());
        m.put("safety_poll_interval_ms", c.safetyPollInterval().toMillis());
        m.put("cursor_advance_delay_ms", c.cursorAdvanceDelay().toMillis());
        m.put("handler", cfg.riffleApi.equals("subscribe")
                ? "subscribe(queue).flatMap(job -> [delay].then(job.complete()), W, 1)"
                : "work(Map.of(kind, job -> [delay].then(Mono.empty())), W, queue); completion observed on the"
                + " emitted JobResult (accepted = durable)");
        return m;
    }

    @Override
    public void reset(Connection admin) throws Exception {
        try (Statement st = admin.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
        // migrate now, outside every measured phase: start with migrate(true), then close again
        Riffle migrated = Riffle.start(config(true)).block(Duration.ofMinutes(2));
        if (migrated != null) {
            migrated.close().block(Duration.ofMinutes(1));
        }
    }

    /** The engine configuration; {@code migrate} only in {@link #reset}, so migrations never fall into a phase. */
    private RiffleConfig config(boolean migrate) {
        RiffleConfig.Builder b = RiffleConfig.builder();
        if (maintenance != null) {
            b.maintenance(maintenance);
        }
        if (cfg.enqueueShards > 0) {
            b.queue(dev.riffle.engine.api.QueueConfig.of(QUEUE).withEnqueueShards(cfg.enqueueShards));
        }
        return b
                .url(cfg.url)
                .schema(schema)
                .poolSize(cfg.poolSize)
                .applicationName("riffle-bench")
                .migrate(migrate)
                .maxClaimBatch(cfg.claimBatch)
                .completionBatchSize(cfg.ackBatch)
                .completionWindow(Duration.ofMillis(cfg.ackWindowMillis))
                .copyEnqueueThreshold(cfg.copyEnqueueThreshold)
                .warmPool(cfg.warmPool)
                .claimConcurrency(cfg.claimConcurrency)
                .build();
    }

    @Override
    public void open() {
        riffle = Riffle.start(config(false)).block(Duration.ofMinutes(2));
        client = riffle.client();
    }

    @Override
    public void enqueue(List<BenchJob> jobs) {
        List<NewJob> batch = new ArrayList<>(jobs.size());
        for (BenchJob j : jobs) {
            batch.add(NewJob.builder(KIND).queue(QUEUE).args(j.argsJson()).build());
        }
        List<Long> ids = client.enqueueMany(batch).block(Duration.ofMinutes(2));
        if (ids == null || ids.size() != jobs.size()) {
            throw new IllegalStateException("enqueueMany returned " + (ids == null ? "null" : ids.size() + " ids")
                    + " for " + jobs.size() + " jobs");
        }
    }

    @Override
    public void startWorkers(int concurrency, Duration handlerDelay, JobSink sink) {
        workers = cfg.riffleApi.equals("subscribe")
                ? subscribeWorkers(concurrency, handlerDelay, sink)
                : workWorkers(concurrency, handlerDelay, sink);
    }

    /** {@code subscribe(queue).flatMap(job -> [delay].then(job.complete()), W, 1)}. */
    private Disposable subscribeWorkers(int concurrency, Duration handlerDelay, JobSink sink) {
        boolean delay = !handlerDelay.isZero();
        return riffle.subscribe(QUEUE)
                .flatMap(job -> {
                    long seq = Payloads.seqOf(job.argsJson());
                    sink.started(seq);
                    Mono<Void> done = delay ? Mono.delay(handlerDelay).then(job.complete()) : job.complete();
                    return done.doOnSuccess(v -> sink.completed(seq))
                            .onErrorResume(e -> {
                                sink.error(e);
                                return Mono.empty();
                            });
                }, concurrency, 1)
                .subscribe(v -> { }, sink::error);
    }

    /**
     * {@code work(Map.of(kind, handler), W, queue)}: the handler reports the start and returns the outcome (empty:
     * complete) after the delay; the engine records it and emits a {@link JobResult} once it is durable, which is
     * when the harness counts the completion (the job's sequence number is looked up by job id).
     */
    private Disposable workWorkers(int concurrency, Duration handlerDelay, JobSink sink) {
        boolean delay = !handlerDelay.isZero();
        Map<Long, Long> seqById = new ConcurrentHashMap<>();
        JobHandler handler = job -> {
            long seq = Payloads.seqOf(job.argsJson());
            seqById.put(job.id(), seq);
            sink.started(seq);
            return delay ? Mono.delay(handlerDelay).then(Mono.<JobOutcome>empty()) : Mono.<JobOutcome>empty();
        };
        return riffle.work(Map.of(KIND, handler), concurrency, QUEUE)
                .subscribe(r -> {
                    Long seq = seqById.remove(r.jobId());
                    if (r.accepted() && r.outcome() instanceof JobOutcome.Complete && seq != null) {
                        sink.completed(seq);
                    } else {
                        sink.error(new IllegalStateException("job " + r.jobId() + " not completed: " + r));
                    }
                }, sink::error);
    }

    @Override
    public void stopWorkers() {
        if (workers != null) {
            workers.dispose();
            workers = null;
        }
    }

    @Override
    public Map<String, Object> counters() {
        if (riffle != null) {
            RiffleStats st = riffle.stats();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("claim_batches", st.claimBatches());
            m.put("claimed_jobs", st.claimedJobs());
            m.put("empty_claims", st.emptyClaims());
            m.put("completion_batches", st.completionBatches());
            m.put("completed", st.completed());
            m.put("rejected", st.rejected());
            m.put("listening", st.listening());
            lastCounters = m;
        }
        return lastCounters;
    }

    @Override
    public void close() {
        stopWorkers();
        if (riffle != null) {
            riffle.close().block(Duration.ofMinutes(1));
            riffle = null;
            client = null;
        }
    }
}
