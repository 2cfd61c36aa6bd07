package dev.riffle.admin.internal;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.api.QueueDepth;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Reads every queue's counts once per interval while someone watches, and keeps the last samples: the queue table's
 * rates and the chart come from the difference between samples, so the database is read once per interval however
 * many pages poll. One writer (the ticks run one after another), any number of readers: each tick publishes a new
 * immutable {@link History}, so a reader never sees a half-written one and nothing locks.
 */
public final class QueueSampler implements Disposable {

    private static final Logger log = LoggerFactory.getLogger(QueueSampler.class);

    /** How many samples back a queue's rate is measured over: smooths one-tick bursts of a batched completer. */
    static final int RATE_WINDOW = 5;

    /** Queues sampled at most; counts are one statement per queue. */
    static final int MAX_QUEUES = 200;

    private final Riffle riffle;
    private final Duration interval;
    private final int capacity;
    private final long idleAfterNanos;
    private final AtomicReference<History> history = new AtomicReference<>(new History(List.of()));
    // Nanos of the last API request; Long.MIN_VALUE before the first, so nothing is read before anyone looks.
    private final AtomicLong lastWatched = new AtomicLong(Long.MIN_VALUE);
    private final Disposable loop;

    /** Starts ticking at once; a tick reads only when {@link #watched()} was called within {@code idleAfter}. */
    public QueueSampler(Riffle riffle, Duration interval, int capacity, Duration idleAfter) {
        this.riffle = riffle;
        this.interval = interval;
        this.capacity = capacity;
        this.idleAfterNanos = idleAfter.toNanos();
        this.loop = Flux.interval(Duration.ZERO, interval)
                .onBackpressureDrop()
                .concatMap(tick -> sampleIfWatched(), 1)
                .subscribe();
    }

    /** Marks the dashboard as watched: the next tick reads, and so do the ticks of the next {@code idleAfter}. */
    public void watched() {
        lastWatched.set(System.nanoTime());
    }

    /** The samples so far, oldest first. */
    public History history() {
        return history.get();
    }

    /** The sampling interval. */
    public Duration interval() {
        return interval;
    }

    private Mono<Void> sampleIfWatched() {
        long last = lastWatched.get();
        if (last == Long.MIN_VALUE || System.nanoTime() - last > idleAfterNanos) {
            return Mono.empty();
        }
        return sample()
                .doOnNext(this::append)
                .onErrorResume(e -> {
                    // the next tick tries again; the page shows the sample's age
                    log.warn("dashboard queue sample failed: {}", e.toString());
                    return Mono.empty();
                })
                .then();
    }

    /** One sample: the queue list, each queue's counts, and all queues' depths in one statement. */
    Mono<Sample> sample() {
        return riffle.admin().queues().take(MAX_QUEUES).collectList().flatMap(queues -> {
            Mono<Map<String, QueueCounts>> counts = Flux.fromIterable(queues)
                    .flatMapSequential(riffle::counts, 2)
                    .collectMap(QueueCounts::queue, Function.identity());
            Mono<Map<String, QueueDepth>> depths = riffle.admin().queueDepths(queues)
                    .collectMap(QueueDepth::queue, Function.identity());
            return Mono.zip(counts, depths).map(t -> {
                List<QueueSample> rows = new ArrayList<>(queues.size());
                for (String q : queues) {
                    QueueCounts c = t.getT1().get(q);
                    QueueDepth d = t.getT2().get(q);
                    if (c != null) {
                        rows.add(new QueueSample(c, d == null ? 0 : d.dlq(),
                                d == null ? 0 : d.oldestAvailableAge().toMillis() / 1000.0));
                    }
                }
                return new Sample(Instant.now(), System.nanoTime(), List.copyOf(rows));
            });
        });
    }

    private void append(Sample s) {
        List<Sample> old = history.get().samples();
        List<Sample> next = new ArrayList<>(Math.min(old.size() + 1, capacity));
        next.addAll(old.size() >= capacity ? old.subList(old.size() - capacity + 1, old.size()) : old);
        next.add(s);
        history.set(new History(List.copyOf(next)));
    }

    @Override
    public void dispose() {
        loop.dispose();
    }

    @Override
    public boolean isDisposed() {
        return loop.isDisposed();
    }

    /** One queue in one sample. */
    public record QueueSample(QueueCounts counts, long dlq, double oldestAvailableAgeSeconds) {}

    /** One sample: when, and every queue. */
    public record Sample(Instant at, long nanos, List<QueueSample> queues) {

        long completed() {
            return queues.stream().mapToLong(q -> q.counts().completed()).sum();
        }

        double oldestAvailableAgeSeconds() {
            return queues.stream().mapToDouble(QueueSample::oldestAvailableAgeSeconds).max().orElse(0);
        }

        @Nullable QueueSample queue(String name) {
            for (QueueSample q : queues) {
                if (q.counts().queue().equals(name)) {
                    return q;
                }
            }
            return null;
        }
    }

    /** The kept samples, oldest first. */
    public record History(List<Sample> samples) {

        /** The newest sample, or null before the first. */
        public @Nullable Sample latest() {
            return samples.isEmpty() ? null : samples.get(samples.size() - 1);
        }

        /**
         * Completions per second of {@code queue} over the last {@value #RATE_WINDOW} intervals (fewer at the
         * start); 0 with fewer than two samples. A count that went down (history folded differently) reads as 0.
         */
        public double completedPerSecond(String queue) {
            int n = samples.size();
            if (n < 2) {
                return 0;
            }
            Sample now = samples.get(n - 1);
            Sample then = samples.get(Math.max(0, n - 1 - RATE_WINDOW));
            QueueSample a = then.queue(queue);
            QueueSample b = now.queue(queue);
            if (b == null) {
                return 0;
            }
            long before = a == null ? 0 : a.counts().completed();
            return rate(b.counts().completed() - before, now.nanos() - then.nanos());
        }

        /** The chart's points: per sample after the first, completions per second since the previous sample. */
        public List<Point> points() {
            List<Point> out = new ArrayList<>(samples.size());
            for (int i = 1; i < samples.size(); i++) {
                Sample prev = samples.get(i - 1);
                Sample s = samples.get(i);
                out.add(new Point(s.at(), rate(s.completed() - prev.completed(), s.nanos() - prev.nanos()),
                        s.oldestAvailableAgeSeconds(),
                        s.queues().stream().mapToLong(q -> q.counts().available()).sum(),
                        s.queues().stream().mapToLong(q -> q.counts().inFlight()).sum()));
            }
            return out;
        }

        private static double rate(long delta, long nanos) {
            return delta <= 0 || nanos <= 0 ? 0 : delta * 1e9 / nanos;
        }
    }

    /** One point of the chart. */
    public record Point(Instant at, double completedPerSecond, double oldestAvailableAgeSeconds, long available,
                        long running) {}
}
