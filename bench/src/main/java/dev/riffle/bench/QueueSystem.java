package dev.riffle.bench;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;

/**
 * What the harness drives. One instance serves one run at a time; the harness calls, in order:
 * {@link #reset} (fresh schema), {@link #open}, then {@link #enqueue} and/or {@link #startWorkers} /
 * {@link #stopWorkers}, and finally {@link #close}, which must release every database connection so that PostgreSQL
 * flushes the backends' statistics (commit counters, dead tuples) before the harness reads them.
 */
interface QueueSystem extends AutoCloseable {

    /** Short name used in the output: {@code baseline} or {@code riffle}. */
    String name();

    /** The schema holding every table of this system; dead tuples are counted there. */
    String schema();

    /** Drops and recreates this system's schema (or drops it, when {@link #open} migrates). */
    void reset(Connection admin) throws Exception;

    /** Opens connections (and, for Riffle, starts the engine). */
    void open() throws Exception;

    /** Inserts the jobs and returns once they are committed. Safe to call from several threads at once. */
    void enqueue(List<BenchJob> jobs) throws Exception;

    /**
     * Starts {@code concurrency} concurrent handlers. Each handler calls {@link JobSink#started} first, then waits
     * {@code handlerDelay} without blocking a thread (zero: no wait), then completes the job; once the completion is
     * durable it calls {@link JobSink#completed}. A handler slot stays occupied until the completion is durable.
     */
    void startWorkers(int concurrency, Duration handlerDelay, JobSink sink) throws Exception;

    /** Stops claiming; in-flight handlers may finish. */
    void stopWorkers() throws Exception;

    /** Free-form facts about the configuration (written to the JSON). */
    java.util.Map<String, Object> describe();

    /** Counters of the last run (statements issued and the like); empty when the system keeps none. */
    default java.util.Map<String, Object> counters() {
        return java.util.Map.of();
    }

    /** Stops everything and closes every connection; never throws checked exceptions. */
    @Override
    void close();

    /** One job as the harness produces it. {@code argsJson} is identical for both systems. */
    record BenchJob(long seq, long enqueuedMicros, String argsJson) {
    }

    /** Callbacks from the handlers into the harness. Must be cheap and thread-safe. */
    interface JobSink {
        void started(long seq);

        void completed(long seq);

        void error(Throwable t);
    }
}
