package dev.riffle.bench;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobClient;
import dev.riffle.engine.api.NewJob;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/** Adapter from the harness to the Riffle engine. Loaded reflectively by {@link BenchMain}. */
final class RiffleSystem implements QueueSystem {

    static final String QUEUE = "bench";

    private final BenchConfig cfg;
    private final String schema = "bench_riffle";
    private Riffle riffle;
    private JobClient client;
    private Disposable workers;

    RiffleSystem(BenchConfig cfg) {
        this.cfg = cfg;
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
        m.put("driver", "r2dbc-postgresql through the Riffle engine");
        m.put("pool_size", cfg.poolSize);
        m.put("max_claim_batch", cfg.claimBatch);
        m.put("completion_batch_size", cfg.ackBatch);
        m.put("completion_window_ms", cfg.ackWindowMillis);
        m.put("handler", "subscribe(queue).flatMap(job -> [delay].then(job.complete()), W, 1)");
        return m;
    }

    @Override
    public void reset(Connection admin) throws Exception {
        try (Statement st = admin.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        }
    }

    @Override
    public void open() {
        RiffleConfig config = RiffleConfig.builder()
                .url(cfg.url)
                .schema(schema)
                .poolSize(cfg.poolSize)
                .migrate(true)
                .maxClaimBatch(cfg.claimBatch)
                .completionBatchSize(cfg.ackBatch)
                .completionWindow(Duration.ofMillis(cfg.ackWindowMillis))
                .build();
        riffle = Riffle.start(config).block(Duration.ofMinutes(2));
        client = riffle.client();
    }

    @Override
    public void enqueue(List<BenchJob> jobs) {
        List<NewJob> batch = new ArrayList<>(jobs.size());
        for (BenchJob j : jobs) {
            batch.add(NewJob.builder("bench").queue(QUEUE).args(j.argsJson()).build());
        }
        List<Long> ids = client.enqueueMany(batch).block(Duration.ofMinutes(2));
        if (ids == null || ids.size() != jobs.size()) {
            throw new IllegalStateException("enqueueMany returned " + (ids == null ? "null" : ids.size() + " ids")
                    + " for " + jobs.size() + " jobs");
        }
    }

    @Override
    public void startWorkers(int concurrency, Duration handlerDelay, JobSink sink) {
        boolean delay = !handlerDelay.isZero();
        workers = riffle.subscribe(QUEUE)
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

    @Override
    public void stopWorkers() {
        if (workers != null) {
            workers.dispose();
            workers = null;
        }
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
