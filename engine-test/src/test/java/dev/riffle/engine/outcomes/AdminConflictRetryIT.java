package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.awaitCount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A deadlock (40P01) or serialization failure (40001) on an admin call rolled the whole statement back, so the
 * call is repeated after a short backoff instead of failing the operator. The conflict is injected by a trigger
 * that raises the SQLSTATE a set number of times (a sequence counts the tries: nextval is not rolled back), which
 * makes the failure deterministic where a real deadlock between two sessions depends on who detects it first.
 */
@RiffleTest
class AdminConflictRetryIT {
    private Probe db;

    @BeforeEach
    void openProbe(TestDatabase database) {
        db = Probe.open(database);
    }

    @AfterEach
    void dropFaults() {
        db.execute("DROP TRIGGER IF EXISTS inject_conflict ON deferred_jobs");
        db.execute("DROP TRIGGER IF EXISTS inject_conflict ON dlq_entries");
        db.execute("DROP FUNCTION IF EXISTS inject_conflict()");
        db.execute("DROP SEQUENCE IF EXISTS conflict_tries");
        db.close();
    }

    /**
     * Makes every DELETE of a {@code table} row of {@code queue} fail with {@code sqlState} for the first
     * {@code failures} tries. Names are qualified: the trigger runs in the engine's sessions, not on this search_path.
     */
    private void injectConflicts(String table, String queue, String sqlState, int failures) {
        String schema = "\"" + db.schema() + "\"";
        db.execute("CREATE SEQUENCE conflict_tries");
        db.execute("CREATE FUNCTION inject_conflict() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN "
                + "IF nextval('" + schema + ".conflict_tries') <= TG_ARGV[0]::int THEN "
                + "RAISE EXCEPTION 'injected conflict' USING ERRCODE = TG_ARGV[1]; END IF; RETURN OLD; END $f$");
        db.execute("CREATE TRIGGER inject_conflict BEFORE DELETE ON " + table + " FOR EACH ROW WHEN (OLD.queue = '"
                + queue + "') EXECUTE FUNCTION inject_conflict('" + failures + "', '" + sqlState + "')");
    }

    private long tries() {
        return db.queryLong("SELECT last_value FROM conflict_tries");
    }

    @Test
    void aCancelThatDeadlocksIsRetriedAndSucceeds() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("conflict-cancel")
                    .runAt(Instant.now().plus(Duration.ofHours(1))).build());
            injectConflicts("deferred_jobs", "conflict-cancel", "40P01", 2);

            assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
            assertThat(tries()).as("two rolled-back tries, then the one that committed").isEqualTo(3);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM terminal_jobs WHERE job_id = ? AND state = 'cancelled'", id)).isEqualTo(1);
        } finally {
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aBulkPurgeThatHitsASerializationFailureIsRetriedAndSucceeds() {
        Riffle riffle = OutcomeKit.start(db);
        Disposable worker = riffle.work(Map.of("k", job -> Mono.just(JobOutcome.fail("bad input"))), 2, "conflict-purge")
                .subscribe();
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("conflict-purge").build());
            awaitCount(db, 1, "SELECT count(*) FROM dlq_entries WHERE job_id = ?", id);
            injectConflicts("dlq_entries", "conflict-purge", "40001", 1);

            assertThat(riffle.admin().purgeDlq(DlqFilter.queue("conflict-purge")).block(TIMEOUT)).isEqualTo(List.of(id));
            assertThat(tries()).isEqualTo(2);
            assertThat(db.queryLong("SELECT count(*) FROM dlq_entries WHERE job_id = ?", id)).isZero();
        } finally {
            worker.dispose();
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void aConflictThatPersistsIsSurfacedAfterABoundedNumberOfTries() {
        Riffle riffle = OutcomeKit.start(db);
        try {
            long id = OutcomeKit.enqueue(riffle, NewJob.builder("k").queue("conflict-forever")
                    .runAt(Instant.now().plus(Duration.ofHours(1))).build());
            injectConflicts("deferred_jobs", "conflict-forever", "40P01", 1_000);

            long t0 = System.nanoTime();
            assertThatThrownBy(() -> riffle.admin().cancel(id).block(TIMEOUT))
                    .satisfies(e -> assertThat(Db.sqlState(e)).as("the database's own error, not a wrapper").isEqualTo("40P01"));
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("short backoff").isLessThan(Duration.ofSeconds(10));
            assertThat(tries()).as("retried, but not forever").isBetween(2L, 20L);
            assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ?", id)).as("nothing changed").isEqualTo(1);
            // Leave nothing pending for sibling tests.
            db.execute("DROP TRIGGER inject_conflict ON deferred_jobs");
            assertThat(riffle.admin().cancel(id).block(TIMEOUT)).isEqualTo(CancelResult.CANCELLED_SCHEDULED);
        } finally {
            OutcomeKit.close(riffle);
        }
    }
}
