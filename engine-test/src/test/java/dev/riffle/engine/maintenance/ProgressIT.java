package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobProgress;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Progress written in attempt 1 is readable in attempt 2 after a retry, and through the read API meanwhile. */
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
            // Buffered only: nothing written until a heartbeat or an explicit flush.
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state")).isZero();
            first.flushProgress().block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT (progress->'metadata'->>'cursor')::int FROM attempt_state WHERE job_id = ?", id))
                    .isEqualTo(7);
            Optional<String> visible = riffle.admin().progress(id).block(Fixtures.TIMEOUT);
            assertThat(visible).hasValueSatisfying(p -> assertThat(p).contains("\"percent\": 40").contains("halfway"));

            first.retry("interrupted", Duration.ZERO).block(Fixtures.TIMEOUT);
            assertThat(db.queryLong("SELECT count(*) FROM attempt_state")).as("evidence ends with the attempt").isZero();
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
}
