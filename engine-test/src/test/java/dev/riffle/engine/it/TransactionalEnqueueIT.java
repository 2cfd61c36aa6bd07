package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.r2dbc.spi.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Enqueue on the caller's connection commits or rolls back with the caller's own writes; a job refused before it is
 * sent leaves the caller's transaction usable, one the database refuses aborts it.
 */
@RiffleTest
class TransactionalEnqueueIT {

    private static Mono<Long> enqueueWithBusinessWrite(Riffle riffle, Connection c, String schema, String marker, boolean commit) {
        return Mono.from(c.beginTransaction())
                .then(Mono.from(c.createStatement("INSERT INTO \"" + schema + "\".orders (marker) VALUES ($1)").bind("$1", marker).execute())
                        .flatMap(r -> Mono.from(r.getRowsUpdated())))
                .then(riffle.client().enqueue(c, NewJob.builder("order.placed").queue("tx").args("{\"marker\":\"" + marker + "\"}").build()))
                .flatMap(id -> Mono.from(commit ? c.commitTransaction() : c.rollbackTransaction()).thenReturn(id));
    }

    @Test
    void rolledBackJobNeverAppearsAndCommittedJobIsDelivered(TestDatabase db) {
        db.execute("CREATE TABLE orders (marker text PRIMARY KEY)");
        // A long safety poll: delivery within a few seconds can only come from the NOTIFY sent at commit.
        Riffle riffle = Engines.start(db, b -> b.safetyPollInterval(Duration.ofMinutes(5)));
        var factory = Engines.connectionFactory(db);
        try {
            // Subscribe first so delivery depends on the wake-up, not on finding work at subscribe time.
            Flux<Job> jobs = riffle.subscribe("tx").cache();
            var firstJob = jobs.next().toFuture();
            Mono.delay(Duration.ofMillis(500)).block();

            Long rolledBack = Mono.usingWhen(factory.create(), c -> enqueueWithBusinessWrite(riffle, c, db.schema(), "a", false),
                    Connection::close).block(Engines.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM orders")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", rolledBack)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", rolledBack)).isZero();

            Long committed = Mono.usingWhen(factory.create(), c -> enqueueWithBusinessWrite(riffle, c, db.schema(), "b", true),
                    Connection::close).block(Engines.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM orders WHERE marker = 'b'")).isEqualTo(1);

            Job job = Mono.fromFuture(firstJob).block(Duration.ofSeconds(10));
            assertThat(job.id()).isEqualTo(committed);
            assertThat(job.argsJson()).contains("\"b\"");
            job.complete().block(Engines.TIMEOUT);

            // Nothing else is ever delivered: the rolled-back job does not exist.
            List<Job> more = riffle.subscribe("tx").take(Duration.ofSeconds(1)).collectList().block(Engines.TIMEOUT);
            assertThat(more).isEmpty();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE queue = 'tx'")).isEqualTo(1);
        } finally {
            Engines.close(riffle);
        }
    }

    private static Mono<Long> insertOrder(Connection c, String table, String marker) {
        return Mono.from(c.createStatement("INSERT INTO " + table + " (marker) VALUES ($1)").bind("$1", marker).execute())
                .flatMap(r -> Mono.from(r.getRowsUpdated()));
    }

    private static NewJob order(String queue, String args) {
        return NewJob.builder("order.placed").queue(queue).args(args).build();
    }

    @Test
    void malformedArgsAreRefusedBeforeAnythingIsSentSoTheCallersTransactionGoesOn(TestDatabase db) {
        // The reason the one client-side JSON check stays (docs/adr/0008-json-judged-once.md): a syntax error
        // found while the NewJob is built never reaches the caller's transaction.
        db.execute("CREATE TABLE orders_syntax (marker text PRIMARY KEY)");
        String orders = "\"" + db.schema() + "\".orders_syntax";
        Riffle riffle = Engines.start(db);
        var factory = Engines.connectionFactory(db);
        try {
            AtomicReference<InvalidJobException> refused = new AtomicReference<>();
            Long id = Mono.usingWhen(factory.create(), c -> Mono.from(c.beginTransaction())
                            .then(insertOrder(c, orders, "before"))
                            .then(Mono.fromCallable(() -> order("txsyntax", "{\"sku\":\"A-1\",}")))
                            .flatMap(job -> riffle.client().enqueue(c, job))
                            .onErrorResume(InvalidJobException.class, e -> {
                                refused.set(e);
                                return Mono.empty();
                            })
                            .then(insertOrder(c, orders, "after"))
                            .then(riffle.client().enqueue(c, order("txsyntax", "{\"sku\":\"A-1\"}")))
                            .flatMap(ok -> Mono.from(c.commitTransaction()).thenReturn(ok)),
                    Connection::close).block(Engines.TIMEOUT);

            assertThat(refused.get()).isNotNull();
            assertThat(refused.get().field()).isEqualTo("args");
            assertThat(refused.get().getMessage()).startsWith("args: invalid JSON at offset 13: ");
            assertThat(db.queryLong("SELECT count(*) FROM orders_syntax")).as("both writes of the caller committed").isEqualTo(2);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", id)).isEqualTo(1);
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void argsOnlyTheDatabaseCanRefuseAreInvalidArgsButAbortTheCallersTransaction(TestDatabase db) {
        // Valid JSON that jsonb cannot store (a NUL escape): the database is the judge, the caller still gets the
        // typed error naming args, and PostgreSQL has aborted the transaction, as it would for every syntax error
        // if the client-side check were deleted. JobClient's javadoc tells callers to roll back.
        db.execute("CREATE TABLE orders_jsonb (marker text PRIMARY KEY)");
        String orders = "\"" + db.schema() + "\".orders_jsonb";
        Riffle riffle = Engines.start(db);
        var factory = Engines.connectionFactory(db);
        try {
            AtomicReference<InvalidJobException> refused = new AtomicReference<>();
            AtomicReference<Throwable> next = new AtomicReference<>();
            Mono.usingWhen(factory.create(), c -> Mono.from(c.beginTransaction())
                            .then(insertOrder(c, orders, "lost"))
                            .then(riffle.client().enqueue(c, order("txjsonb", "{\"note\":\"\\u0000\"}")))
                            .onErrorResume(InvalidJobException.class, e -> {
                                refused.set(e);
                                return Mono.empty();
                            })
                            .then(insertOrder(c, orders, "next"))
                            .onErrorResume(e -> {
                                next.set(e);
                                return Mono.empty();
                            })
                            .then(Mono.from(c.rollbackTransaction())),
                    Connection::close).block(Engines.TIMEOUT);

            assertThat(refused.get()).isNotNull();
            assertThat(refused.get().field()).isEqualTo("args");
            assertThat(refused.get().getMessage()).startsWith("args: rejected by the database: ");
            assertThat(Db.sqlState(refused.get())).isEqualTo("22P05");
            assertThat(Db.sqlState(next.get())).as("the caller's next statement").isEqualTo("25P02");
            assertThat(db.queryLong("SELECT count(*) FROM orders_jsonb")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'txjsonb'")).isZero();
        } finally {
            Engines.close(riffle);
        }
    }

    @Test
    void aFutureRunAtGoesToTheDeferredBacklog(TestDatabase db) {
        Riffle riffle = Engines.start(db);
        try {
            Long id = riffle.client().enqueue(NewJob.builder("later").queue("sched")
                    .runAt(java.time.Instant.now().plus(Duration.ofHours(1))).build()).block(Engines.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND state = 'scheduled'", id)).isEqualTo(1);
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ?", id)).isZero();
            assertThat(riffle.counts("sched").block(Engines.TIMEOUT).scheduled()).isEqualTo(1);
        } finally {
            Engines.close(riffle);
        }
    }
}
