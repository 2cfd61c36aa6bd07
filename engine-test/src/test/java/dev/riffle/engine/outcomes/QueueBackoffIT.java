package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.asLong;
import static dev.riffle.engine.outcomes.OutcomeKit.delaySeconds;
import static dev.riffle.engine.outcomes.OutcomeKit.makeDue;
import static dev.riffle.engine.outcomes.OutcomeKit.promote;
import static dev.riffle.engine.outcomes.OutcomeKit.row;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;

/**
 * Per-queue retry backoff (issue #13 item 5): a queue's {@code BackoffPolicy} is recorded in {@code queue_meta} at
 * start and the database's {@code retry_backoff} applies it; a {@code BackoffFunction} is evaluated by the engine.
 * Delays are read from the stored timestamps (deferred run_at minus the closure's closed_at, one statement's clock),
 * never from waiting.
 */
class QueueBackoffIT extends ProbeIT {
    private static final double SAME_STATEMENT_SLACK = 0.05;

    private static Job claimOne(Riffle riffle, String queue) {
        return riffle.subscribe(queue).next().block(TIMEOUT);
    }

    @Test
    void aRecordedPolicyBoundsEveryRetryDelay() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("bo.policy")
                .withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(2), 0.5)));
        try {
            Map<String, Object> meta = row(db, "SELECT backoff_base_ms, backoff_cap_ms, backoff_jitter FROM queue_meta "
                    + "WHERE queue = 'bo.policy'");
            assertThat(asLong(meta.get("backoff_base_ms"))).isEqualTo(1000);
            assertThat(asLong(meta.get("backoff_cap_ms"))).isEqualTo(2000);
            assertThat(((Number) meta.get("backoff_jitter")).doubleValue()).isEqualTo(0.5);

            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("bo.policy").maxAttempts(5).build());
            claimOne(riffle, "bo.policy").retry("one").block(TIMEOUT);
            assertThat(delaySeconds(db, id, 1)).as("attempt 1: base 1 s plus up to 50 %")
                    .isBetween(1.0 - SAME_STATEMENT_SLACK, 1.5 + SAME_STATEMENT_SLACK);
            for (int attempt = 2; attempt <= 3; attempt++) {
                makeDue(db, id);
                assertThat(promote(riffle)).isEqualTo(1);
                // A thrown error takes the same path as a retry without a delay.
                claimOne(riffle, "bo.policy").finish(JobOutcome.retryOn(new IllegalStateException("again")))
                        .block(TIMEOUT);
                assertThat(delaySeconds(db, id, attempt)).as("attempt %d: 2 s and more, capped at 2 s", attempt)
                        .isBetween(2.0 - SAME_STATEMENT_SLACK, 2.0 + SAME_STATEMENT_SLACK);
            }

            // Rescue runs in the database and reads the same recorded policy.
            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            Job held = claimOne(riffle, "bo.policy");
            assertThat(held.attempt()).isEqualTo(4);
            assertThat(riffle.maintenance().rescueStaleNow(Duration.ZERO).block(TIMEOUT)).hasSize(1);
            assertThat(delaySeconds(db, id, 4)).as("rescued attempt 4: capped at 2 s")
                    .isBetween(2.0 - SAME_STATEMENT_SLACK, 2.0 + SAME_STATEMENT_SLACK);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aBackoffFunctionIsEvaluatedByTheEngineAndAnExplicitDelayStillWins() {
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("bo.fn")
                .withBackoffFunction(attempt -> Duration.ofSeconds(100L + attempt))));
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("bo.fn").maxAttempts(5).build());
            claimOne(riffle, "bo.fn").retry("one").block(TIMEOUT);
            assertThat(delaySeconds(db, id, 1)).as("the function's 101 s")
                    .isBetween(101.0 - SAME_STATEMENT_SLACK, 101.0 + SAME_STATEMENT_SLACK);

            makeDue(db, id);
            assertThat(promote(riffle)).isEqualTo(1);
            claimOne(riffle, "bo.fn").retry("two", Duration.ofSeconds(7)).block(TIMEOUT);
            assertThat(delaySeconds(db, id, 2)).as("an explicit delay wins over the function")
                    .isBetween(7.0 - SAME_STATEMENT_SLACK, 7.0 + SAME_STATEMENT_SLACK);

            assertThat(db.queryLong("SELECT count(*) FROM queue_meta WHERE queue = 'bo.fn' AND backoff_base_ms IS NOT NULL"))
                    .as("a function is not recorded in the schema").isZero();
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void theSchemaRefusesAnInvalidPolicy() throws SQLException {
        try (var c = database.openJdbc(); var st = c.createStatement()) {
            Assertions.assertThatThrownBy(() -> st.execute("INSERT INTO queue_meta (queue, backoff_base_ms, "
                            + "backoff_cap_ms, backoff_jitter) VALUES ('bo.bad', 2000, 1000, 0.1)"))
                    .isInstanceOf(SQLException.class).hasMessageContaining("queue_meta_backoff_range");
            Assertions.assertThatThrownBy(() -> st.execute("INSERT INTO queue_meta (queue, backoff_base_ms) "
                            + "VALUES ('bo.bad', 2000)"))
                    .isInstanceOf(SQLException.class).hasMessageContaining("queue_meta_backoff_whole");
        }
    }
}
