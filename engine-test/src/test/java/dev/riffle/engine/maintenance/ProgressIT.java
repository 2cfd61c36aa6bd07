package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobProgress;
import dev.riffle.engine.internal.lease.Heartbeater;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Progress written in attempt 1 is readable in attempt 2 after a retry, and through the read API meanwhile; a
 * checkpoint that jsonb refuses is dropped with a typed error and never stops the attempt's heartbeat evidence.
 */
@RiffleTest
class ProgressIT {

    @Test
    void progressOfOneAttemptIsTheCheckpointOfTheNext(TestDatabase db) {
        Riffle riffle = Fixtures.manual(db);
        try {
            long id = Fixtures.enqueue(riffle, "prog", 1).get(0);
            Job first = Fixtures.claim(riffle, "prog", 1).get(0);
            assertThat(first.payloadJson()).isNull();
            first.progress(new JobProgress(40, "halfway \"there\"", "{\"cursor\":7}"));
            // Buffered only: nothing written until a heartbeat or an explicit flush. Counted for this job only:
            // the other tests of the class share the schema.
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ?", id)).isZero();
            first.flushProgress().block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT (progress->'metadata'->>'cursor')::int FROM attempt_state WHERE job_id = ?", id))
                    .isEqualTo(7);
            Optional<String> visible = riffle.admin().progress(id).block(Fixtures.TIMEOUT);
            assertThat(visible).hasValueSatisfying(p -> assertThat(p).contains("\"percent\": 40").contains("halfway"));

            first.retry("interrupted", Duration.ZERO).block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id = ?", id)).as("evidence ends with the attempt").isZero();
            assertThat(riffle.maintenance().promoteNow().block(Fixtures.TIMEOUT)).isEqualTo(1);
            Job second = Fixtures.claim(riffle, "prog", 1).get(0);
            assertThat(second.id()).isEqualTo(id);
            assertThat(second.attempt()).isEqualTo(2);
            assertThat(second.payloadJson()).contains("\"cursor\": 7").contains("\"percent\": 40").contains("interrupted");
            assertThat(riffle.admin().progress(id).block(Fixtures.TIMEOUT)).hasValueSatisfying(p -> assertThat(p).contains("cursor"));
            second.complete().block(Fixtures.TIMEOUT);
        } finally {
            Fixtures.close(riffle);
        }
    }

    private static String metadata(TestDatabase db, long jobId) {
        Object m = db.queryRows("SELECT (progress->'metadata')::text AS m FROM attempt_state WHERE job_id = ?", jobId)
                .get(0).get("m");
        return m == null ? null : m.toString().replace(" ", "");
    }

    private static String heartbeatAt(TestDatabase db, long jobId) {
        return db.queryRows("SELECT heartbeat_at::text AS t FROM attempt_state WHERE job_id = ?", jobId)
                .get(0).get("t").toString();
    }

    @Test
    void aCheckpointJsonbRefusesFailsTheFlushNamingTheMetadataAndKeepsTheEvidence(TestDatabase db) {
        Riffle riffle = Fixtures.manual(db);
        try {
            long id = Fixtures.enqueue(riffle, "progbad", 1).get(0);
            Job job = Fixtures.claim(riffle, "progbad", 1).get(0);
            job.progress(new JobProgress(10, "first", "{\"cursor\":1}"));
            job.flushProgress().block(Fixtures.TIMEOUT);
            String firstBeat = heartbeatAt(db, id);

            // Valid JSON, so the syntax check passes it; jsonb cannot store a NUL escape.
            job.progress(new JobProgress(20, "second", "{\"note\":\"\\u0000\"}"));
            assertThatThrownBy(() -> job.flushProgress().block(Fixtures.TIMEOUT))
                    .isInstanceOfSatisfying(InvalidJobException.class, e -> {
                        assertThat(e.field()).isEqualTo("progress.metadata");
                        assertThat(Db.sqlState(e)).isEqualTo("22P05");
                    });
            assertThat(metadata(db, id)).as("the stored checkpoint is the last good one").isEqualTo("{\"cursor\":1}");
            assertThat(heartbeatAt(db, id)).as("evidence written without the refused checkpoint").isNotEqualTo(firstBeat);

            // Dropped, not retried: the next checkpoint goes through.
            job.progress(new JobProgress(30, "third", "{\"cursor\":3}"));
            job.flushProgress().block(Fixtures.TIMEOUT);
            assertThat(metadata(db, id)).isEqualTo("{\"cursor\":3}");
            job.complete().block(Fixtures.TIMEOUT);
        } finally {
            Fixtures.close(riffle);
        }
    }

    @Test
    void oneRefusedCheckpointInAHeartbeatBatchDoesNotStopTheOthers(TestDatabase db) throws Exception {
        // One heartbeat statement carries every attempt's checkpoint; before the split a single refused one failed
        // it for all of them on every interval, and stale rescue would have taken every long attempt away.
        Riffle riffle = Fixtures.manual(db);
        try {
            List<Long> ids = Fixtures.enqueue(riffle, "progbatch", 3);
            List<Job> jobs = Fixtures.claim(riffle, "progbatch", 3);
            jobs.get(0).progress(new JobProgress(10, "good", "{\"cursor\":10}"));
            jobs.get(1).progress(new JobProgress(20, "bad", "{\"big\":1e1000000}"));
            jobs.get(2).progress(new JobProgress(30, "good", "{\"cursor\":30}"));

            // The engine's own heartbeat pass (the interval is 30 s, so only attempts with progress are due).
            var field = Riffle.class.getDeclaredField("heartbeater");
            field.setAccessible(true);
            Heartbeater heartbeater = (Heartbeater) field.get(riffle);
            assertThat(heartbeater.beatOnce().block(Fixtures.TIMEOUT)).as("evidence rows written").isEqualTo(3);

            assertThat(metadata(db, jobs.get(0).id())).isEqualTo("{\"cursor\":10}");
            assertThat(metadata(db, jobs.get(1).id())).as("refused checkpoint dropped").isNull();
            assertThat(metadata(db, jobs.get(2).id())).isEqualTo("{\"cursor\":30}");
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state WHERE job_id IN (?, ?, ?)", ids.toArray()))
                    .as("evidence for all three").isEqualTo(3);
            assertThat(heartbeater.beatOnce().block(Fixtures.TIMEOUT)).as("nothing left to retry").isZero();
            for (Job j : jobs) {
                j.complete().block(Fixtures.TIMEOUT);
            }
        } finally {
            Fixtures.close(riffle);
        }
    }
}
