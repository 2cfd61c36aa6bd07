package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.EnqueueResult;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.UniqueOptions;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Bulk enqueue with COPY (docs/bulk-enqueue.md): from {@code copyEnqueueThreshold} jobs on, {@code enqueueMany}
 * stages the batch in a session temporary table with COPY and runs the same {@code enqueue_jobs}. The proof that the
 * COPY path ran is in the database: the staging table exists in the session that enqueued, and only that path
 * creates it (with the threshold at 0, the assertions on it fail).
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CopyEnqueueIT {

    private static final int THRESHOLD = 40;
    private static final int MAX_ARGS = 4096;

    private ConnectionPool pool;
    private ConnectionFactory plain;
    private Riffle riffle;

    @BeforeAll
    void start(TestDatabase db) {
        plain = Engines.connectionFactory(db);
        // The application's pool, so the test can look into the sessions the pooled enqueue used.
        pool = new ConnectionPool(ConnectionPoolConfiguration.builder(plain).initialSize(1).maxSize(2)
                .maxAcquireTime(Duration.ofSeconds(20)).build());
        // A long safety poll: a delivery within seconds can only come from the NOTIFY sent at commit.
        riffle = Riffle.start(RiffleConfig.builder().connectionFactory(pool).schema(db.schema()).migrate(false)
                .copyEnqueueThreshold(THRESHOLD).maxArgsBytes(MAX_ARGS).safetyPollInterval(Duration.ofMinutes(5))
                .build()).block(Engines.TIMEOUT);
    }

    @AfterAll
    void stop() {
        Engines.close(riffle);
        if (pool != null) {
            pool.dispose();
        }
    }

    private static NewJob job(String queue, int i) {
        return NewJob.builder("bulk.item").queue(queue).args("{\"i\":" + i + "}").build();
    }

    private static List<NewJob> jobs(String queue, int n) {
        List<NewJob> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(job(queue, i));
        }
        return out;
    }

    /** Runs {@code work} on a fresh session of its own (no pool), closing it after. */
    private <T> T onSession(Function<Connection, Mono<T>> work) {
        return Mono.usingWhen(plain.create(), work, Connection::close).block(Engines.TIMEOUT);
    }

    private static Mono<Boolean> hasStagingTable(Connection c) {
        return Flux.from(c.createStatement("SELECT to_regclass('pg_temp.riffle_enqueue_staging_v1') IS NOT NULL AS t")
                        .execute())
                .concatMap(r -> r.map(row -> row.get("t", Boolean.class)))
                .single();
    }

    private static Mono<Long> stagedRows(Connection c) {
        return Flux.from(c.createStatement("SELECT count(*) AS n FROM pg_temp.riffle_enqueue_staging_v1").execute())
                .concatMap(r -> r.map(row -> row.get("n", Long.class)))
                .single();
    }

    /** Runs {@code work} on every session of the application's pool (it has at most two), all held at once. */
    private <T> List<T> onEachPooledSession(Function<Connection, Mono<T>> work) {
        return Flux.usingWhen(Flux.range(0, 2).flatMap(i -> pool.create()).collectList(),
                        cs -> Flux.fromIterable(cs).concatMap(work),
                        cs -> Flux.fromIterable(cs).concatMap(Connection::close))
                .collectList().block(Engines.TIMEOUT);
    }

    /** Whether any session of the application's pool has the staging table. */
    private boolean anyPooledSessionStaged() {
        return onEachPooledSession(CopyEnqueueIT::hasStagingTable).contains(true);
    }

    /** Every job of {@code queue}, in id order, without its id (and without the enqueue time of a ready row). */
    private static List<Map<String, Object>> stored(TestDatabase db, String queue) {
        List<Map<String, Object>> rows = db.queryRows(
                "SELECT kind, args::text AS args, priority, max_attempts, NULL::timestamptz AS run_at, 'ready' AS t, job_id"
                        + "  FROM ready_entries WHERE queue = ?"
                        + " UNION ALL SELECT kind, args::text, priority, max_attempts, run_at, 'deferred', job_id"
                        + "  FROM deferred_jobs WHERE queue = ? ORDER BY job_id", queue, queue);
        rows.forEach(r -> r.remove("job_id"));
        return rows;
    }

    /** Args that COPY text format must escape (tab, newline, CR, backslash) and some that it must not. */
    private static final List<String> TRICKY = List.of(
            "{\"s\":\"tab\\there\"}",
            "{\"s\":\"line\\nbreak\\r\\nwindows\"}",
            "{\t\"s\"\n:\r\n\"raw whitespace between tokens\"\t}",
            "{\"s\":\"back\\\\slash \\\\N \\\\. \\\\t\"}",
            "{\"s\":\"quotes \\\" and ' and \\u0041\"}",
            "{\"s\":\"unicode é 日本語 \uD83D\uDE80 \\uD83D\\uDE80\"}",
            "{\"nested\":{\"a\":[1,2.5,-3e2,true,false,null],\"b\":\"\\\\\\t\"}}",
            "{}");

    private static List<NewJob> trickyBatch(String queue, Instant later) {
        List<NewJob> out = new ArrayList<>();
        for (int i = 0; i < THRESHOLD; i++) {
            NewJob.Builder b = NewJob.builder(i % 2 == 0 ? "bulk.even" : "bulk.odd").queue(queue)
                    .args(TRICKY.get(i % TRICKY.size())).priority(1 + i % 3).maxAttempts(1 + i % 5);
            if (i % 13 == 5) {
                b.runAt(later);
            }
            out.add(b.build());
        }
        return out;
    }

    @Test
    void aPooledBatchAtTheThresholdIsCopiedAndStoredExactlyAsTheArrayPathStoresIt(TestDatabase db) {
        // Other tests of this class may have staged on the pool's sessions already.
        onEachPooledSession(c -> Flux.from(c.createStatement("DROP TABLE IF EXISTS pg_temp.riffle_enqueue_staging_v1")
                .execute()).concatMap(r -> r.getRowsUpdated()).then(Mono.just(1)));
        assertThat(anyPooledSessionStaged()).as("no COPY yet").isFalse();
        Instant later = Instant.now().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.MICROS);
        List<NewJob> batch = trickyBatch("copied", later);
        List<Long> ids = riffle.client().enqueueMany(batch).block(Engines.TIMEOUT);
        assertThat(anyPooledSessionStaged()).as("the pooled session staged with COPY").isTrue();

        // The same jobs through the array path: two batches below the threshold.
        List<NewJob> same = trickyBatch("arrayed", later);
        riffle.client().enqueueMany(same.subList(0, THRESHOLD / 2)).block(Engines.TIMEOUT);
        riffle.client().enqueueMany(same.subList(THRESHOLD / 2, THRESHOLD)).block(Engines.TIMEOUT);

        assertThat(ids).hasSize(THRESHOLD).doesNotHaveDuplicates().isSorted();
        List<Map<String, Object>> copied = stored(db, "copied");
        assertThat(copied).hasSize(THRESHOLD).isEqualTo(stored(db, "arrayed"));
        assertThat(copied.stream().filter(r -> "deferred".equals(r.get("t")))).hasSize(3);
        // Ids come back in input order: the i-th id holds the i-th job's args, decoded as sent.
        for (int i = 0; i < TRICKY.size(); i++) {
            assertThat(db.queryLong("SELECT count(*) FROM (SELECT args FROM ready_entries WHERE job_id = ?"
                    + " UNION ALL SELECT args FROM deferred_jobs WHERE job_id = ?) x WHERE x.args = ?::jsonb",
                    ids.get(i), ids.get(i), TRICKY.get(i))).as(TRICKY.get(i)).isEqualTo(1);
        }
        assertThat(db.queryRows("SELECT args->>'s' AS s FROM ready_entries WHERE job_id = ?", ids.get(1)))
                .containsExactly(Map.of("s", "line\nbreak\r\nwindows"));
        assertThat(riffle.counts("copied").block(Engines.TIMEOUT).available()).isEqualTo(THRESHOLD - 3);
    }

    @Test
    void inTheCallersTransactionARollbackLeavesNothingAndACommitWakesASubscriber(TestDatabase db) {
        Engines.awaitTrue("LISTEN up", () -> riffle.stats().listening());
        // Subscribe first so delivery depends on the wake-up, not on finding work at subscribe time.
        var delivered = riffle.subscribe("txbulk").take(2L * THRESHOLD).collectList().toFuture();
        Mono.delay(Duration.ofMillis(500)).block();

        onSession(c -> Mono.from(c.beginTransaction())
                .then(riffle.client().enqueueMany(c, jobs("txbulk", THRESHOLD)))
                .flatMap(ids -> hasStagingTable(c).zipWith(stagedRows(c)))
                .doOnNext(t -> {
                    assertThat(t.getT1()).as("staged with COPY in the caller's session").isTrue();
                    assertThat(t.getT2()).as("the staged rows were consumed").isZero();
                })
                .then(Mono.from(c.rollbackTransaction())));
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'txbulk'")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM ready_segments WHERE queue = 'txbulk'")).isZero();

        // Two batches in one transaction: the second finds the staging table empty again.
        List<Long> ids = onSession(c -> Mono.from(c.beginTransaction())
                .then(riffle.client().enqueueMany(c, jobs("txbulk", THRESHOLD)))
                .flatMap(first -> riffle.client().enqueueMany(c, jobs("txbulk", THRESHOLD)).map(second -> {
                    List<Long> all = new ArrayList<>(first);
                    all.addAll(second);
                    return all;
                }))
                .flatMap(all -> Mono.from(c.commitTransaction()).thenReturn(all)));
        assertThat(ids).hasSize(2 * THRESHOLD).doesNotHaveDuplicates().isSorted();

        List<Job> jobs = Mono.fromFuture(delivered).block(Duration.ofSeconds(15));
        assertThat(jobs).extracting(Job::id).containsExactlyInAnyOrderElementsOf(ids);
        // Each batch is claimed in its enqueue order (the two batches may sit on different enqueue shards, whose
        // lanes are claimed independently).
        List<Long> first = ids.subList(0, THRESHOLD);
        assertThat(jobs.stream().map(Job::id).filter(first::contains)).containsExactlyElementsOf(first);
        assertThat(jobs.stream().map(Job::id).filter(id -> !first.contains(id)))
                .containsExactlyElementsOf(ids.subList(THRESHOLD, 2 * THRESHOLD));
        for (Job j : jobs) {
            assertThat(j.argsJson()).isEqualTo("{\"i\": " + (ids.indexOf(j.id()) % THRESHOLD) + "}");
        }
        Flux.fromIterable(jobs).concatMap(Job::complete).blockLast(Engines.TIMEOUT);
    }

    @Test
    void belowTheThresholdAndWithUniqueOptionsTheArrayPathRunsAndAnAutocommitSessionGetsItsOwnTransaction(TestDatabase db) {
        List<Long> ids = onSession(c -> riffle.client().enqueueMany(c, jobs("small", THRESHOLD - 1))
                .then(hasStagingTable(c))
                .doOnNext(staged -> assertThat(staged).as("below the threshold").isFalse())
                .then(Mono.fromSupplier(() -> {
                    List<NewJob> batch = new ArrayList<>(jobs("small", THRESHOLD - 1));
                    batch.add(NewJob.builder("bulk.item").queue("small").args("{\"u\":1}")
                            .unique(UniqueOptions.byArgs()).build());
                    return batch;
                }))
                .flatMap(batch -> riffle.client().enqueueManyWithResult(c, batch))
                .doOnNext(results -> assertThat(results).hasSize(THRESHOLD).noneMatch(EnqueueResult::duplicate))
                .then(hasStagingTable(c))
                .doOnNext(staged -> assertThat(staged).as("a batch with a unique job").isFalse())
                // Autocommit: the COPY path opens and commits a transaction of its own and leaves the session as
                // it found it.
                .then(riffle.client().enqueueMany(c, jobs("small", THRESHOLD)))
                .flatMap(copied -> hasStagingTable(c).doOnNext(staged -> {
                    assertThat(staged).as("at the threshold").isTrue();
                    assertThat(c.isAutoCommit()).isTrue();
                }).thenReturn(copied)));
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'small'"))
                .isEqualTo(3L * THRESHOLD - 1);
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ANY (?::bigint[])",
                "{" + ids.get(0) + "," + ids.get(ids.size() - 1) + "}")).as("committed").isEqualTo(2);
    }

    @Test
    void validationErrorsAreTheArrayPathsAndADatabaseRefusalLeavesNothing(TestDatabase db) {
        String big = "{\"s\":\"" + "x".repeat(MAX_ARGS) + "\"}";
        List<String> messages = new ArrayList<>();
        for (int size : new int[] {THRESHOLD - 1, THRESHOLD}) {
            List<NewJob> batch = new ArrayList<>(jobs("invalid", size - 1));
            batch.add(NewJob.builder("bulk.item").queue("invalid").args(big).build());
            assertThatThrownBy(() -> riffle.client().enqueueMany(batch).block(Engines.TIMEOUT))
                    .isInstanceOfSatisfying(InvalidJobException.class, e -> {
                        assertThat(e.field()).isEqualTo("args");
                        messages.add(e.getMessage());
                    });
            List<NewJob> typed = new ArrayList<>(jobs("invalid", size - 1));
            typed.add(NewJob.builder("bulk.item").queue("invalid").typedArgs(Map.of("a", 1)).build());
            assertThatThrownBy(() -> riffle.client().enqueueMany(typed).block(Engines.TIMEOUT))
                    .isInstanceOfSatisfying(InvalidJobException.class, e -> messages.add(e.getMessage()));
        }
        assertThat(messages).hasSize(4);
        assertThat(messages.get(2)).isEqualTo(messages.get(0));
        assertThat(messages.get(3)).isEqualTo(messages.get(1));

        // Valid JSON only jsonb can refuse (a NUL escape), in the middle of a COPY batch: the same typed error as
        // the array path's, the batch's own transaction rolled back, and the pooled session fit for the next one.
        List<NewJob> nul = new ArrayList<>(jobs("invalid", THRESHOLD));
        nul.set(THRESHOLD / 2, NewJob.builder("bulk.item").queue("invalid").args("{\"n\":\"\\u0000\"}").build());
        AtomicReference<Throwable> refused = new AtomicReference<>();
        riffle.client().enqueueMany(nul).doOnError(refused::set).onErrorComplete().block(Engines.TIMEOUT);
        assertThat(refused.get()).isInstanceOfSatisfying(InvalidJobException.class, e -> {
            assertThat(e.field()).isEqualTo("args");
            assertThat(e.getMessage()).startsWith("args: rejected by the database: ");
        });
        assertThat(Db.sqlState(refused.get())).isEqualTo("22P05");
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'invalid'")).isZero();
        for (int i = 0; i < 2; i++) {
            assertThat(riffle.client().enqueueMany(jobs("invalid", THRESHOLD)).block(Engines.TIMEOUT)).hasSize(THRESHOLD);
        }
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'invalid'")).isEqualTo(2L * THRESHOLD);
    }
}
