package dev.riffle.engine.internal.complete;

import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.RiffleShutdownException;
import dev.riffle.engine.internal.claim.ClaimedJob.Receipt;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * Batches successful completions (DESIGN.md §5.3.1): a flush goes out at {@code batchSize} items or
 * {@code window} after the first pending item, whichever comes first, as ONE {@code complete_compact} statement
 * (one round trip, one commit). Each caller's {@code Mono} succeeds when its completion is durable, or errors with
 * {@link AttemptRejectedException} when the attempt was no longer open.
 *
 * <p>If the process dies with items buffered, nothing is replayed: those attempts stay open and rescue handles
 * them. A flush that fails with a transient error (connection loss) is retried; a completion whose first try did
 * commit is then reported back as already closed by the database, which this class maps to success only for the
 * retried flush.
 */
public final class CompletionBatcher {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.complete");

    private record Pending(Receipt receipt, MonoSink<Void> sink) {}

    private final Db db;
    private final AtomicLong flushes = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final Disposable pipeline;
    private final reactor.core.publisher.Sinks.Empty<Void> terminated = reactor.core.publisher.Sinks.empty();
    private volatile FluxSink<Pending> input;
    private volatile boolean closed;

    /** Starts the batching pipeline. */
    public CompletionBatcher(Db db, int batchSize, Duration window, int flushConcurrency, Scheduler timer) {
        this.db = db;
        // Flux.create's sink is serialized, so handlers on any thread may submit concurrently.
        this.pipeline = Flux.<Pending>create(s -> input = s, FluxSink.OverflowStrategy.BUFFER)
                .bufferTimeout(batchSize, window, timer, true)
                .flatMap(this::flush, flushConcurrency, 1)
                .doFinally(s -> terminated.tryEmitEmpty())
                .subscribe(v -> {}, e -> log.error("completion pipeline terminated", e));
    }

    /** Completes one attempt; cold. */
    public Mono<Void> complete(Receipt receipt) {
        return Mono.create(sink -> {
            if (closed) {
                sink.error(new RiffleShutdownException("engine is closed; completion of job " + receipt.jobId() + " not sent"));
                return;
            }
            input.next(new Pending(receipt, sink));
        });
    }

    private Mono<Void> flush(List<Pending> batch) {
        int n = batch.size();
        Integer[] slots = new Integer[n];
        Long[] batchIds = new Long[n];
        Integer[] idxs = new Integer[n];
        Long[] jobIds = new Long[n];
        Long[] leases = new Long[n];
        Long[] receipts = new Long[n];
        for (int i = 0; i < n; i++) {
            Receipt r = batch.get(i).receipt();
            slots[i] = r.claimSlot();
            batchIds[i] = r.batchId();
            idxs[i] = r.batchIndex();
            jobIds[i] = r.jobId();
            leases[i] = r.runLease();
            receipts[i] = r.receiptId();
        }
        boolean[] retried = new boolean[1];
        return Mono.defer(() -> db.query("complete",
                                st -> st.bind("$1", slots).bind("$2", batchIds).bind("$3", idxs).bind("$4", jobIds)
                                        .bind("$5", leases).bind("$6", receipts),
                                row -> row.get("status", String.class))
                        .collectList())
                .retryWhen(Retry.backoff(3, Duration.ofMillis(50)).filter(Db::isTransient)
                        .doBeforeRetry(s -> {
                            retried[0] = true;
                            log.warn("completion flush of {} failed transiently, retrying: {}", n, s.failure().toString());
                        }))
                .doOnNext(statuses -> {
                    flushes.incrementAndGet();
                    for (int i = 0; i < n; i++) {
                        Pending p = batch.get(i);
                        String status = i < statuses.size() ? statuses.get(i) : "stale";
                        if ("completed".equals(status) || (retried[0] && "closed".equals(status))) {
                            completed.incrementAndGet();
                            p.sink().success();
                        } else {
                            rejected.incrementAndGet();
                            p.sink().error(new AttemptRejectedException(p.receipt().jobId(), p.receipt().runLease(),
                                    "closed".equals(status) ? AttemptRejectedException.Reason.ALREADY_CLOSED
                                                            : AttemptRejectedException.Reason.STALE));
                        }
                    }
                })
                .onErrorResume(e -> {
                    log.error("completion flush of {} failed; the attempts stay open for rescue", n, e);
                    batch.forEach(p -> p.sink().error(e));
                    return Mono.empty();
                })
                .then();
    }

    /** Flushes done (one statement each). */
    public long flushes() {
        return flushes.get();
    }

    /** Completions accepted. */
    public long completed() {
        return completed.get();
    }

    /** Completions rejected as closed or stale. */
    public long rejected() {
        return rejected.get();
    }

    /** Stops accepting completions; completes once the buffered ones are flushed. */
    public Mono<Void> close() {
        closed = true;
        FluxSink<Pending> s = input;
        if (s != null) {
            s.complete();
        }
        return terminated.asMono();
    }

    /** Tears the pipeline down without waiting. */
    public void dispose() {
        pipeline.dispose();
    }
}
