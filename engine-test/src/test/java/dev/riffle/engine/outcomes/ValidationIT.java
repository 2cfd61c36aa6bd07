package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import dev.riffle.engine.test.TestDatabase.TestDatabaseException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Every invalid input is refused at the API edge with a typed error naming the field, and nothing is written; the
 * database's CHECK constraints refuse the same values when a writer bypasses the API.
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ValidationIT {

    private static final int MAX_ARGS = 64;
    private static final List<String> WRITTEN_TABLES = List.of("ready_entries", "deferred_jobs", "ready_segments",
            "queue_claim_heads", "queue_enqueue_heads", "done_entries", "queue_meta", "dlq_entries");

    private Riffle riffle;
    private Probe db;

    @BeforeAll
    void start(TestDatabase database) {
        db = Probe.open(database);
        riffle = OutcomeKit.start(db, b -> b.maxArgsBytes(MAX_ARGS));
    }

    @AfterAll
    void stop() {
        OutcomeKit.close(riffle);
        db.close();
    }

    /** Row counts of every table an enqueue writes, in one round trip. */
    private Map<String, Object> counts() {
        StringBuilder sql = new StringBuilder("SELECT 1 AS one");
        for (String t : WRITTEN_TABLES) {
            sql.append(", (SELECT count(*) FROM ").append(t).append(") AS ").append(t);
        }
        return OutcomeKit.row(db, sql.toString());
    }

    /** Builds the input and enqueues it, so a refusal at either stage counts, and checks nothing was written. */
    private void assertRefused(String field, Supplier<List<NewJob>> input) {
        Map<String, Object> before = counts();
        assertThatThrownBy(() -> riffle.client().enqueueMany(input.get()).block(TIMEOUT))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> {
                    assertThat(e.field()).isEqualTo(field);
                    assertThat(e.getMessage()).startsWith(field + ":");
                });
        assertThat(counts()).as("row counts after a refused %s", field).isEqualTo(before);
    }

    private void assertRefusedJob(String field, Supplier<NewJob.Builder> job) {
        assertRefused(field, () -> List.of(job.get().build()));
    }

    private static NewJob.Builder valid() {
        return NewJob.builder("valid.kind").queue("valid-queue");
    }

    @Test
    void badQueueNamesAreRefused() {
        for (String bad : List.of("", "q".repeat(129), "has space", "a/b", "-leading", "\u00fcn\u00efcode", "semi;colon")) {
            assertRefusedJob("queue", () -> valid().queue(bad));
        }
        assertRefusedJob("queue", () -> valid().queue(null));
    }

    @Test
    void badKindsAreRefused() {
        for (String bad : List.of("", "k".repeat(129), "bad kind", "a/b", ".leading")) {
            assertRefusedJob("kind", () -> NewJob.builder(bad).queue("valid-queue"));
        }
    }

    @Test
    void argsMustBeOneValidJsonObject() {
        for (String bad : List.of("[]", "\"x\"", "42", "null", "{\"a\":}", "{\"a\":1", "{\"a\":1} {}", "{a:1}", "")) {
            assertRefusedJob("args", () -> valid().args(bad));
        }
        assertRefusedJob("args", () -> valid().args(null));
    }

    @Test
    void argsOverTheConfiguredSizeAreRefusedAndTheLimitItselfIsAccepted() {
        String prefix = "{\"s\":\"";
        String suffix = "\"}";
        int fill = MAX_ARGS - prefix.length() - suffix.length();
        assertRefusedJob("args", () -> valid().queue("size-limit").args(prefix + "x".repeat(fill + 1) + suffix));
        // Bytes, not characters: 22 euro signs are 66 UTF-8 bytes in 22 UTF-16 units.
        assertRefusedJob("args", () -> valid().queue("size-limit").args("{\"s\":\"" + "\u20ac".repeat(22) + "\"}"));

        String atLimit = prefix + "x".repeat(fill) + suffix;
        assertThat(atLimit.getBytes(StandardCharsets.UTF_8)).hasSize(MAX_ARGS);
        long id = OutcomeKit.enqueue(riffle, valid().queue("size-limit").args(atLimit).build());
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ? AND args = ?::jsonb", id, atLimit)).isEqualTo(1);
    }

    @Test
    void argsThatJsonbCannotStoreAreRefusedAsInvalidArgs() {
        // Both are valid JSON, so only the database can refuse them: a NUL character (SQLSTATE 22P05) and a number
        // beyond the range of numeric (22003). The caller must still get the typed error, not a driver exception.
        assertRefusedJob("args", () -> valid().args("{\"a\":\"\\u0000\"}"));
        assertRefusedJob("args", () -> valid().args("{\"a\":1e1000000}"));
    }

    @Test
    void outOfRangeNumbersAndTimesAreRefused() {
        assertRefusedJob("priority", () -> valid().priority(0));
        assertRefusedJob("priority", () -> valid().priority(5));
        assertRefusedJob("maxAttempts", () -> valid().maxAttempts(0));
        assertRefusedJob("maxAttempts", () -> valid().maxAttempts(1001));
        assertRefusedJob("runAt", () -> valid().runAt(Instant.parse("1999-12-31T23:59:59Z")));
        assertRefusedJob("runAt", () -> valid().runAt(Instant.parse("2300-01-01T00:00:00Z")));
    }

    @Test
    void runAtBoundsAreOneRuleForTheApiAndTheDatabase() {
        // The database keeps run_at in [2000-01-01, 2200-01-01): the upper bound itself is out.
        assertRefusedJob("runAt", () -> valid().queue("run-at-bounds").runAt(Instant.parse("2200-01-01T00:00:00Z")));
        assertRefusedJob("runAt", () -> valid().queue("run-at-bounds").runAt(Instant.parse("1999-12-31T23:59:59.999999Z")));
        // Valid for Java, but the database rounds to microseconds, to 2200-01-01: its CHECK refuses it, and the
        // caller must hear about runAt, not see the constraint's text under field "jobs".
        assertRefusedJob("runAt", () -> valid().queue("run-at-bounds").runAt(Instant.parse("2199-12-31T23:59:59.9999999Z")));

        long last = OutcomeKit.enqueue(riffle, valid().queue("run-at-bounds").runAt(Instant.parse("2199-12-31T23:59:59.999999Z")).build());
        assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND run_at = '2199-12-31T23:59:59.999999Z'",
                last)).isEqualTo(1);
        // The lower bound is in (and in the past, so the job is ready at once).
        long first = OutcomeKit.enqueue(riffle, valid().queue("run-at-bounds").runAt(Instant.parse("2000-01-01T00:00:00Z")).build());
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ? AND run_at = '2000-01-01T00:00:00Z'",
                first)).isEqualTo(1);
    }

    /**
     * One name rule on every public entry that takes a queue or kind: a bad name is refused with the same typed
     * error enqueue gives, naming the value, instead of reading as an empty queue or being written somewhere.
     */
    @Test
    void everyEntryTakingAQueueOrKindNameRefusesABadOne() {
        String bad = "bad name!";
        Map<String, Object> before = counts();
        Map<String, org.assertj.core.api.ThrowableAssert.ThrowingCallable> queueEntries = new java.util.LinkedHashMap<>();
        queueEntries.put("counts", () -> riffle.counts(bad).block(TIMEOUT));
        queueEntries.put("subscribe", () -> riffle.subscribe(bad).blockFirst(TIMEOUT));
        queueEntries.put("subscribe (second queue)", () -> riffle.subscribe("valid-queue", bad).blockFirst(TIMEOUT));
        queueEntries.put("work", () -> riffle.work(Map.of("valid.kind", j -> reactor.core.publisher.Mono.empty()), 1, bad)
                .blockFirst(TIMEOUT));
        queueEntries.put("enqueue", () -> riffle.client().enqueue(valid().queue(bad).build()).block(TIMEOUT));
        queueEntries.put("listDlq", () -> riffle.admin().listDlq(bad, 0, 10).blockFirst(TIMEOUT));
        queueEntries.put("DlqFilter.queue", () -> riffle.admin().retryDlq(DlqFilter.queue(bad)).block(TIMEOUT));
        queueEntries.put("DlqFilter.of", () -> riffle.admin().purgeDlq(DlqFilter.of(bad, "valid.kind")).block(TIMEOUT));
        queueEntries.put("QueueConfig.of", () -> QueueConfig.of(bad));
        queueEntries.put("QueueConfig.withDeadline", () -> QueueConfig.withDeadline(bad, Duration.ofSeconds(5)));
        queueEntries.put("RiffleConfig.queue", () -> riffle.config().queue(bad));
        queueEntries.put("RiffleConfig.dlqFor", () -> riffle.config().dlqFor(bad));
        List<String> accepted = new ArrayList<>();
        queueEntries.forEach((entry, call) -> checkNameRefused(accepted, entry, "queue", bad, call));

        Map<String, org.assertj.core.api.ThrowableAssert.ThrowingCallable> kindEntries = new java.util.LinkedHashMap<>();
        kindEntries.put("enqueue", () -> riffle.client().enqueue(NewJob.builder(bad).queue("valid-queue").build()).block(TIMEOUT));
        kindEntries.put("work (handler kind)", () -> riffle.work(Map.of(bad, j -> reactor.core.publisher.Mono.empty()), 1,
                "valid-queue").blockFirst(TIMEOUT));
        kindEntries.put("DlqFilter.kind", () -> riffle.admin().retryDlq(DlqFilter.kind(bad)).block(TIMEOUT));
        kindEntries.put("DlqFilter.of", () -> riffle.admin().purgeDlq(DlqFilter.of("valid-queue", bad)).block(TIMEOUT));
        kindEntries.forEach((entry, call) -> checkNameRefused(accepted, entry, "kind", bad, call));

        assertThat(accepted).as("entries that did not refuse the name with InvalidJobException naming it").isEmpty();
        assertThat(counts()).as("row counts after every refused name").isEqualTo(before);
    }

    private static void checkNameRefused(List<String> accepted, String entry, String field, String bad,
                                         org.assertj.core.api.ThrowableAssert.ThrowingCallable call) {
        Throwable t = org.assertj.core.api.Assertions.catchThrowable(call);
        if (!(t instanceof InvalidJobException e && e.field().equals(field) && e.getMessage().contains("'" + bad + "'"))) {
            accepted.add(entry + " (" + field + "): " + (t == null ? "no error" : t.toString()));
        }
    }

    @Test
    void batchSizeIsBounded() {
        assertRefused("jobs", List::of);
        assertRefused("jobs", () -> {
            List<NewJob> many = new ArrayList<>();
            NewJob one = valid().queue("batch-limit").build();
            for (int i = 0; i < 10_001; i++) {
                many.add(one);
            }
            return many;
        });
        // One bad job refuses the whole batch: the valid ones before it are not written either.
        assertRefused("args", () -> {
            String big = "{\"s\":\"" + "x".repeat(MAX_ARGS) + "\"}";
            return List.of(valid().queue("batch-limit").build(), NewJob.builder("valid.kind").queue("batch-limit").args(big).build());
        });
    }

    @Test
    void theLongestValidNamesAreAcceptedByTheApiAndTheDatabaseAlike() {
        String queue = "q".repeat(NewJob.MAX_NAME_LENGTH);
        String kind = "k" + "_.:-".repeat(31) + "abc";
        assertThat(kind).hasSize(NewJob.MAX_NAME_LENGTH);
        long now = OutcomeKit.enqueue(riffle, NewJob.builder(kind).queue(queue).priority(1).maxAttempts(1000).build());
        long later = OutcomeKit.enqueue(riffle, NewJob.builder(kind).queue(queue).priority(4).maxAttempts(1)
                .runAt(Instant.parse("2199-12-31T00:00:00Z")).build());
        assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE job_id = ? AND queue = ? AND kind = ?", now, queue, kind)).isEqualTo(1);
        assertThat(db.queryLong("SELECT count(*) FROM deferred_jobs WHERE job_id = ? AND queue = ?", later, queue)).isEqualTo(1);
    }

    @Test
    void databaseChecksRefuseWhatTheApiRefuses() {
        String ready = "INSERT INTO ready_entries (ready_slot, ready_generation, job_id, kind, queue, args, priority, "
                + "max_attempts, lane_seq, run_at, created_at) VALUES (0, 0, -1, ?, ?, ?::jsonb, ?, ?, -1, now(), now())";
        assertCheckViolation("ready_entries_queue_name", ready, "k", "bad queue", "{}", 2, 1);
        assertCheckViolation("ready_entries_queue_name", ready, "k", "", "{}", 2, 1);
        assertCheckViolation("ready_entries_queue_name", ready, "k", "q".repeat(129), "{}", 2, 1);
        assertCheckViolation("ready_entries_kind_name", ready, "a/b", "q", "{}", 2, 1);
        assertCheckViolation("ready_entries_priority_check", ready, "k", "q", "{}", 5, 1);
        assertCheckViolation("ready_entries_max_attempts_check", ready, "k", "q", "{}", 2, 1001);
        assertCheckViolation("ready_entries_args_check", ready, "k", "q", "[]", 2, 1);

        String deferred = "INSERT INTO deferred_jobs (job_id, kind, queue, args, state, priority, max_attempts, run_at, "
                + "created_at) VALUES (-1, ?, ?, '{}', 'scheduled', 2, 1, now(), now())";
        assertCheckViolation("deferred_jobs_queue_name", deferred, "k", "bad/queue");
        assertCheckViolation("deferred_jobs_kind_name", deferred, "bad kind", "q");
    }

    /**
     * The name CHECKs run on every enqueued row; V1 spelled their length bound as a bounded repetition
     * ({@code {0,127}}), which PostgreSQL's regex engine unrolls and rebuilds on every match (about 5 us each, 5-6 %
     * of the server's CPU in a steady run). V14 bounds the length with {@code char_length}. Fails on V1's definitions.
     */
    @Test
    void nameChecksBoundTheLengthOutsideThePattern() {
        List<Map<String, Object>> defs = db.database().queryRows("SELECT conname AS name, pg_get_constraintdef(c.oid) AS def "
                + "FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
                + "WHERE n.nspname = ? AND t.relname IN ('ready_entries', 'deferred_jobs') AND c.conname ~ '_(queue|kind)_name$'",
                db.database().schema());
        assertThat(defs).hasSize(4);
        for (Map<String, Object> d : defs) {
            assertThat((String) d.get("def")).as("%s", d.get("name")).contains("char_length").doesNotContainPattern("\\{[0-9]");
        }
    }

    private void assertCheckViolation(String constraint, String sql, Object... params) {
        assertThatThrownBy(() -> db.database().execute(sql, params))
                .isInstanceOfSatisfying(TestDatabaseException.class, e -> {
                    assertThat(e.sqlState()).isEqualTo("23514");
                    assertThat(e.getMessage()).contains(constraint);
                });
    }

    @Test
    void schemaNamesAreValidatedBeforeAnythingConnects() {
        for (String bad : List.of("Bad-Name", "UPPER", "1starts_with_digit", "semi;colon", "quo\"te", "", "x".repeat(64))) {
            assertThatThrownBy(() -> RiffleConfig.builder().url(db.url()).schema(bad).build())
                    .as("schema %s", bad).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(RiffleConfig.builder().url(db.url()).schema("_ok_schema_9").build().schema()).isEqualTo("_ok_schema_9");
    }
}
