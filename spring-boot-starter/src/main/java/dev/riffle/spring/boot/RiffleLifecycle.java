package dev.riffle.spring.boot;

import dev.riffle.engine.Riffle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Runs the handler beans and shuts the engine down with the application.
 *
 * <p>Start: subscribes {@link Riffle#work} with every handler of {@link RiffleHandlers} over the worker queues (when
 * there is a handler and workers are enabled). Stop, in Boot's shutdown phase: {@link Riffle#shutdownGracefully}
 * (stop claiming, give back jobs claimed and not started, let running handlers finish for up to the grace period,
 * then close), reporting back to Spring when it is done, so the shutdown waits for it without blocking a thread.
 *
 * <p>Phase {@value #PHASE}: below the web server's ({@code SmartLifecycle.DEFAULT_PHASE - 2048}) and its graceful
 * shutdown's, so the workers run before the server takes requests and the engine closes only after the server has
 * stopped taking them (a request in flight may still enqueue). Bean destruction closes an engine still open (a
 * context that never started, or a shutdown phase that timed out) before the application's {@code ConnectionFactory}
 * is disposed, since this bean depends on the engine, which depends on the factory.
 */
public final class RiffleLifecycle implements SmartLifecycle, DisposableBean {

    /** This lifecycle's phase: {@code SmartLifecycle.DEFAULT_PHASE - 4096}. */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(RiffleLifecycle.class);
    /** How long bean destruction waits for an engine still open to close. */
    static final Duration DESTROY_CLOSE_WAIT = Duration.ofSeconds(30);

    private final Riffle riffle;
    private final RiffleHandlers handlers;
    private final boolean workersEnabled;
    private final int concurrency;
    private final List<String> queues;
    private final Duration gracePeriod;
    private final AtomicBoolean running = new AtomicBoolean();
    private volatile @Nullable Disposable work;
    /** The graceful shutdown once {@link #stop(Runnable)} began it (cached: {@link #destroy()} waits for it too). */
    private volatile @Nullable Mono<Void> closing;

    /**
     * @param riffle the engine (started)
     * @param handlers handlers by kind
     * @param workersEnabled whether to run the handlers here
     * @param concurrency handlers running at once, at most
     * @param queues queues the workers take jobs from (at least one when there are handlers)
     * @param gracePeriod how long running handlers may finish at shutdown
     */
    public RiffleLifecycle(Riffle riffle, RiffleHandlers handlers, boolean workersEnabled, int concurrency,
                           List<String> queues, Duration gracePeriod) {
        this.riffle = Objects.requireNonNull(riffle, "riffle");
        this.handlers = Objects.requireNonNull(handlers, "handlers");
        this.workersEnabled = workersEnabled;
        this.concurrency = concurrency;
        this.queues = List.copyOf(queues);
        this.gracePeriod = Objects.requireNonNull(gracePeriod, "gracePeriod");
        if (gracePeriod.isNegative()) {
            throw new IllegalArgumentException("riffle.shutdown.grace-period must not be negative, got " + gracePeriod);
        }
        if (workersEnabled && !handlers.isEmpty()) {
            if (this.queues.isEmpty()) {
                throw new IllegalArgumentException("riffle.worker.queues is empty but there are handlers " + handlers
                        + ": name the queues to work, or set riffle.worker.enabled=false");
            }
            if (concurrency < 1 || concurrency > Riffle.MAX_WORK_CONCURRENCY) {
                throw new IllegalArgumentException("riffle.worker.concurrency must be between 1 and "
                        + Riffle.MAX_WORK_CONCURRENCY + ", got " + concurrency);
            }
        }
    }

    @Override
    public void start() {
        if (!running.compareAndSet(false, true)) {
            return;
        }
        if (!workersEnabled) {
            log.info("riffle workers disabled (riffle.worker.enabled=false): this application only enqueues");
            return;
        }
        if (handlers.isEmpty()) {
            log.info("no JobHandler beans: riffle workers not started");
            return;
        }
        String[] qs = queues.toArray(String[]::new);
        work = riffle.work(handlers.byKind(), concurrency, qs).subscribe(
                result -> {
                    if (!result.accepted()) {
                        log.debug("outcome of job {} (attempt {}) not recorded: the attempt was closed meanwhile",
                                result.jobId(), result.runLease());
                    }
                },
                error -> log.error("riffle workers stopped with an error", error),
                () -> log.debug("riffle workers completed"));
        log.info("riffle workers started: kinds {}, queues {}, concurrency {}", handlers.byKind().keySet(), queues,
                concurrency);
    }

    @Override
    public void stop() {
        throw new UnsupportedOperationException("stop(Runnable) only: the graceful shutdown is asynchronous");
    }

    @Override
    public void stop(Runnable callback) {
        if (!running.compareAndSet(true, false)) {
            callback.run();
            return;
        }
        log.info("riffle shutting down: running handlers have up to {} to finish", gracePeriod);
        Mono<Void> shutdown = riffle.shutdownGracefully(gracePeriod)
                .doFinally(signal -> {
                    Disposable w = work;
                    if (w != null) {
                        w.dispose();
                    }
                })
                .cache();
        closing = shutdown;
        shutdown.subscribe(null, error -> {
                    log.warn("riffle graceful shutdown failed", error);
                    callback.run();
                }, callback);
    }

    @Override
    public boolean isRunning() {
        return running.get();
    }

    @Override
    public int getPhase() {
        return PHASE;
    }

    /**
     * Waits for the graceful shutdown to end, or closes the engine when no shutdown phase ran (blocks the destroying
     * thread, at most 30 s), so the engine is closed before the application's {@code ConnectionFactory} is disposed.
     */
    @Override
    public void destroy() {
        Mono<Void> c = closing;
        if (c == null) {
            Disposable w = work;
            if (w != null) {
                w.dispose();
            }
            c = riffle.close();
        }
        try {
            c.onErrorResume(e -> Mono.empty()).block(DESTROY_CLOSE_WAIT);
        } catch (IllegalStateException timeout) {
            log.warn("riffle engine not closed within {}; its open attempts stay open for rescue", DESTROY_CLOSE_WAIT);
        }
    }
}
