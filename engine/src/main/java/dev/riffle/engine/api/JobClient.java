package dev.riffle.engine.api;

import io.r2dbc.spi.Connection;
import java.util.List;
import reactor.core.publisher.Mono;

/**
 * Enqueues jobs. Every method is cold and validates its input before touching the database; invalid input fails
 * with {@link InvalidJobException} and writes nothing. A batch is one round trip.
 *
 * <p>The {@code Connection} overloads are <b>transactional enqueue</b>: the jobs are written on the caller's own
 * connection, inside whatever transaction the caller has open, so they commit or roll back with the caller's
 * writes. The wake-up NOTIFY is sent in that transaction and is delivered only on commit. A job refused by the
 * checks of {@link NewJob} or of this client was never sent, so the caller's transaction is untouched and may go on.
 * The few values only the database can refuse (args text that {@code jsonb} cannot store: a
 * <code>&#92;u0000</code> escape, a number beyond {@code numeric}) fail with {@link InvalidJobException} as well,
 * but the statement failed inside the caller's transaction, which PostgreSQL has then aborted: roll it back.
 */
public interface JobClient {

    /** Enqueues one job on a pooled connection (autocommit); emits its id. */
    Mono<Long> enqueue(NewJob job);

    /** Enqueues a batch on a pooled connection in one statement; emits ids in input order. */
    Mono<List<Long>> enqueueMany(List<NewJob> jobs);

    /** Enqueues one job on the caller's connection (and transaction). */
    Mono<Long> enqueue(Connection connection, NewJob job);

    /** Enqueues a batch on the caller's connection (and transaction); emits ids in input order. */
    Mono<List<Long>> enqueueMany(Connection connection, List<NewJob> jobs);

    /**
     * Enqueues one job on a pooled connection and says whether it was a duplicate of a unique job
     * ({@link NewJob#unique()}, docs/unique-jobs.md): then the id is the existing job's and nothing was written. The
     * methods that emit plain ids emit the existing job's id for a duplicate as well.
     */
    Mono<EnqueueResult> enqueueWithResult(NewJob job);

    /** {@link #enqueueWithResult(NewJob)} for a batch, in one statement; results in input order. */
    Mono<List<EnqueueResult>> enqueueManyWithResult(List<NewJob> jobs);

    /** {@link #enqueueWithResult(NewJob)} on the caller's connection (and transaction). */
    Mono<EnqueueResult> enqueueWithResult(Connection connection, NewJob job);

    /** {@link #enqueueManyWithResult(List)} on the caller's connection (and transaction). */
    Mono<List<EnqueueResult>> enqueueManyWithResult(Connection connection, List<NewJob> jobs);
}
