package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The application's own {@code ConnectionFactory} (issue #13 item 2): one app-owned r2dbc-pool carries the app's
 * transactional enqueues and the whole engine (claims, completions, admin, LISTEN/leader sessions from the unwrapped
 * driver factory); a non-pooled factory is wrapped in the engine's own pool; closing the engine leaves the app's
 * pool open and usable. Sessions are told apart by {@code application_name} in {@code pg_stat_activity}.
 */
@RiffleTest
class OwnConnectionFactoryIT {

    private static PostgresqlConnectionFactory driverFactory(TestDatabase db, String applicationName) {
        var url = db.url();
        var b = PostgresqlConnectionConfiguration.builder().host(url.host()).port(url.port()).database(url.database())
                .username(url.user()).applicationName(applicationName);
        if (url.password() != null) {
            b.password(url.password());
        }
        return new PostgresqlConnectionFactory(b.build());
    }

    private static ConnectionPool appPool(TestDatabase db, String applicationName, int size) {
        return new ConnectionPool(ConnectionPoolConfiguration.builder(driverFactory(db, applicationName))
                .initialSize(1).maxSize(size).maxAcquireTime(Duration.ofSeconds(10)).build());
    }

    private static long sessions(TestDatabase db, String applicationName) {
        return db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", applicationName);
    }

    /** Counts each delivered job id; a job handled twice shows up as a count of 2. */
    private static JobHandler counting(Map<Long, AtomicInteger> handled) {
        return job -> {
            handled.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet();
            return Mono.just(JobOutcome.complete());
        };
    }

    /** One order row and one job in the caller's transaction on {@code c}; commit or roll back both. */
    private static Mono<Long> placeOrder(Riffle riffle, Connection c, String table, String queue, int n, boolean commit) {
        return Mono.from(c.beginTransaction())
                .then(Mono.from(c.createStatement("INSERT INTO " + table + " (n) VALUES ($1)").bind("$1", n).execute())
                        .flatMap(r -> Mono.from(r.getRowsUpdated())))
                .then(riffle.client().enqueue(c, NewJob.builder("order.placed").queue(queue).args("{\"n\":" + n + "}").build()))
                .flatMap(id -> Mono.from(commit ? c.commitTransaction() : c.rollbackTransaction()).thenReturn(id));
    }

    @Test
    void theAppsPoolCarriesTransactionalEnqueueAndTheEngine(TestDatabase db) {
        String app = "app-" + db.schema();
        String engineName = "riffle-" + db.schema();
        String table = "\"" + db.schema() + "\".orders";
        db.execute("CREATE TABLE orders (n int PRIMARY KEY)");
        ConnectionPool pool = appPool(db, app, 6);
        Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();
        Riffle riffle = Riffle.start(RiffleConfig.builder().connectionFactory(pool).schema(db.schema()).migrate(false)
                .applicationName(engineName).build()).block(Engines.TIMEOUT);
        Disposable worker = null;
        try {
            Engines.awaitTrue("LISTEN up on the unwrapped driver factory", () -> riffle.stats().listening());
            Engines.awaitTrue("leader elected over the unwrapped driver factory", () -> riffle.stats().leader());
            worker = riffle.work(Map.of("order.placed", counting(handled), "test.noop", counting(handled)), 8,
                    "orders", "bulk").subscribe();

            // 60 transactions on connections of the app's pool while the engine claims and completes on it too:
            // every third rolls back (order and job together).
            List<Long> committed = new ArrayList<>();
            List<Long> rolledBack = new ArrayList<>();
            List<Mono<long[]>> txs = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                int n = i;
                boolean commit = i % 3 != 0;
                txs.add(Mono.usingWhen(pool.create(), c -> placeOrder(riffle, c, table, "orders", n, commit),
                        Connection::close).map(id -> new long[] {id, commit ? 1 : 0}));
            }
            for (long[] r : Flux.fromIterable(txs).flatMap(m -> m, 4).collectList().block(Engines.TIMEOUT)) {
                (r[1] == 1 ? committed : rolledBack).add(r[0]);
            }
            // And non-transactional enqueue, which takes its connection from the same pool.
            List<Long> bulk = Engines.enqueue(riffle, "bulk", 200);

            Set<Long> expected = new java.util.HashSet<>(committed);
            expected.addAll(bulk);
            Engines.awaitTrue("every committed and bulk job handled",
                    () -> handled.keySet().containsAll(expected));
            assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(committed.size()).isEqualTo(40);
            // Settle: a duplicate or a rolled-back job would show up in this window.
            Mono.delay(Duration.ofMillis(500)).block();
            assertThat(handled.keySet()).containsExactlyInAnyOrderElementsOf(expected);
            assertThat(handled.values()).allSatisfy(n -> assertThat(n.get()).as("handled once").isEqualTo(1));
            assertThat(rolledBack).hasSize(20).noneMatch(handled::containsKey);
            assertThat(riffle.counts("bulk").block(Engines.TIMEOUT).completed()).isEqualTo(200);

            // The engine opened no pool of its own: its statements ran on the app's pool, whose sessions carry the
            // app's application_name untouched; only the LISTEN and leader sessions are the engine's.
            assertThat(sessions(db, engineName + ".pool")).isZero();
            assertThat(sessions(db, engineName + ".listen")).isEqualTo(2);
            assertThat(sessions(db, app)).isBetween(1L, 6L);
            assertThat(pool.getMetrics()).isPresent();
        } finally {
            if (worker != null) {
                worker.dispose();
            }
            Engines.close(riffle);
        }
        // Closing the engine closed its own sessions and nothing of the app's.
        Engines.awaitTrue("engine sessions gone", () -> sessions(db, engineName + ".listen") == 0);
        assertThat(pool.isDisposed()).isFalse();
        Integer one = Mono.usingWhen(pool.create(),
                c -> Mono.from(c.createStatement("SELECT 1 AS one").execute()).flatMap(r -> Mono.from(r.map(row -> row.get("one", Integer.class)))),
                Connection::close).block(Engines.TIMEOUT);
        assertThat(one).isEqualTo(1);
        pool.disposeLater().block(Engines.TIMEOUT);
    }

    @Test
    void aNonPooledFactoryIsWrappedInTheEnginesOwnPoolAndAnExplicitListenFactoryIsUsed(TestDatabase db) {
        String engineName = "riffle-np-" + db.schema();
        ConnectionFactory plain = driverFactory(db, "app-plain-" + db.schema());
        ConnectionFactory listen = driverFactory(db, "app-listen-" + db.schema());
        Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();
        Riffle riffle = Riffle.start(RiffleConfig.builder().connectionFactory(plain).listenConnectionFactory(listen)
                .schema(db.schema()).migrate(false).poolSize(3).applicationName(engineName).build())
                .block(Engines.TIMEOUT);
        Disposable worker = null;
        try {
            Engines.awaitTrue("LISTEN up", () -> riffle.stats().listening());
            worker = riffle.work(Map.of("test.noop", counting(handled)), 8, "plain").subscribe();
            List<Long> ids = Engines.enqueue(riffle, "plain", 100);
            Engines.awaitTrue("all handled", () -> handled.keySet().containsAll(ids));
            assertThat(handled).hasSize(100);
            assertThat(handled.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
            // The engine's pool (named by postAllocate) holds at most poolSize sessions of the plain factory.
            assertThat(sessions(db, engineName + ".pool")).isBetween(1L, 3L);
            // A pool session is named by postAllocate right after it connects; one being opened at this instant
            // still carries the factory's name for a moment, so wait for none rather than look once.
            Engines.awaitTrue("no plain-factory session outside the engine's pool",
                    () -> sessions(db, "app-plain-" + db.schema()) == 0);
            assertThat(sessions(db, engineName + ".listen")).isBetween(1L, 2L);
        } finally {
            if (worker != null) {
                worker.dispose();
            }
            Engines.close(riffle);
        }
        Engines.awaitTrue("the engine's own pool disposed", () -> sessions(db, engineName + ".pool") == 0
                && sessions(db, engineName + ".listen") == 0);
    }
}
