package dev.riffle.engine.fault;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.fault.PgCluster;
import dev.riffle.migrations.RiffleMigrations;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/** Engine start-up, enqueue and waiting helpers shared by the fault tests; all of it runs on the test thread. */
final class Fixtures {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private Fixtures() {}

    /**
     * An {@code application_name} prefix unique to one test run. Faults target engines by this prefix, and on the
     * shared server other people's engines must never match it.
     */
    static String appName(String test) {
        return "riffle-" + test + "-" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 40, 1L << 41), 36);
    }

    /**
     * Starts an engine. Ring rotation is slowed to once an hour: prune truncates terminal history and closure
     * batches a few seconds after a slot wraps, and the oracle needs them; ring faults have scenarios of their own.
     * Staleness is pushed beyond any test's length so that an attempt left open by a fault shows up in the oracle
     * as open instead of being rescued behind the test's back; rescue scenarios set their own.
     */
    static Riffle start(DatabaseUrl url, String schema, String appName, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(url).schema(schema).migrate(false).poolSize(6)
                .applicationName(appName)
                .maintenance(MaintenanceConfig.builder().rotationInterval(Duration.ofHours(1))
                        .staleAfter(Duration.ofMinutes(10)).build());
        tweak.accept(b);
        return Riffle.start(b.build()).block(TIMEOUT);
    }

    static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                r.close().block(TIMEOUT);
            }
        }
    }

    static void migrate(PgCluster pg, String schema) {
        DatabaseUrl url = pg.url();
        RiffleMigrations.migrate(url.jdbcUrl(), url.user(), "", RiffleMigrations.Settings.of(schema));
    }

    static List<NewJob> jobs(String queue, int from, int n) {
        List<NewJob> batch = new ArrayList<>(n);
        for (int i = from; i < from + n; i++) {
            batch.add(NewJob.builder("fault.test").queue(queue).args("{\"i\":" + i + "}").build());
        }
        return batch;
    }

    /** Enqueues {@code n} jobs in batches of 1,000 and returns their ids. */
    static List<Long> enqueue(Riffle riffle, String queue, int n) {
        List<Long> ids = new ArrayList<>(n);
        for (int from = 0; from < n; from += 1000) {
            ids.addAll(riffle.client().enqueueMany(jobs(queue, from, Math.min(1000, n - from))).block(TIMEOUT));
        }
        return ids;
    }

    /**
     * Enqueues {@code n} jobs in one call, retrying a failed call up to five times; returns the acknowledged ids and
     * adds the number of failed calls to {@code failures}. After a fault the pool can hand out dead connections, and
     * a producer that cares retries; a failed call may still have committed, which oracles based on the database's
     * committed set absorb.
     */
    static List<Long> enqueueRetrying(Riffle riffle, String queue, int n, AtomicInteger failures) {
        RuntimeException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                return riffle.client().enqueueMany(jobs(queue, 0, n)).block(TIMEOUT);
            } catch (RuntimeException e) {
                last = e;
                failures.incrementAndGet();
                sleep(100);
            }
        }
        throw last;
    }

    /** The URL as text a child process can parse, including the password when there is one. */
    static String urlArgument(DatabaseUrl url) {
        String userInfo = enc(url.user()) + (url.password() == null ? "" : ":" + enc(url.password()));
        return "postgresql://" + userInfo + "@" + url.host() + ":" + url.port() + "/" + enc(url.database());
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    /** Polls {@code condition} every 50 ms; false when {@code timeout} passed without it becoming true. */
    static boolean await(BooleanSupplier condition, Duration timeout) {
        return dev.riffle.engine.test.Await.within(timeout, condition);
    }

    static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static String seconds(long startNanos) {
        return String.format(Locale.ROOT, "%.1f s", (System.nanoTime() - startNanos) / 1e9);
    }

    /**
     * Drains {@code queue} on {@code engine} until every job of {@code ids} has completed, failing on a second
     * accepted completion of any job or after 90 s; returns the run lease of each job's completing attempt.
     */
    static java.util.Map<Long, Long> drainOnce(Riffle engine, String queue, List<Long> ids, int concurrency) {
        java.util.Set<Long> completed = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.Map<Long, Long> leaseOf = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.Queue<Long> twice = new java.util.concurrent.ConcurrentLinkedQueue<>();
        reactor.core.Disposable drain = engine.subscribe(queue)
                .flatMap(j -> j.complete().doOnSuccess(v -> {
                    if (!completed.add(j.id())) {
                        twice.add(j.id());
                    }
                    leaseOf.put(j.id(), j.runLease());
                }), concurrency, 1)
                .subscribe();
        try {
            org.assertj.core.api.Assertions.assertThat(await(() -> completed.size() == ids.size(), Duration.ofSeconds(90)))
                    .as("all %d jobs completed; %d so far", ids.size(), completed.size()).isTrue();
        } finally {
            drain.dispose();
        }
        org.assertj.core.api.Assertions.assertThat(twice).as("jobs whose completion was accepted twice").isEmpty();
        org.assertj.core.api.Assertions.assertThat(completed).containsExactlyInAnyOrderElementsOf(ids);
        return leaseOf;
    }
}
