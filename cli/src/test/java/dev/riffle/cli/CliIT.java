package dev.riffle.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The riffle command line run in-process against this class's schema: output, JSON and exit codes, including 2 for
 * a bad command line, 3 for a database that cannot be reached and 4 for a schema that is not migrated.
 */
@RiffleTest(claimSlots = 2, queueSlots = 4)
class CliIT {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** One run: exit code, stdout, stderr. */
    record Run(int code, String out, String err) {}

    static Run cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = RiffleCli.run(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), args);
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    static String url(TestDatabase db) {
        DatabaseUrl u = db.url();
        String auth = u.password() == null ? u.user() : u.user() + ":" + u.password();
        return "postgresql://" + auth + "@" + u.host() + ":" + u.port() + "/" + u.database();
    }

    static Run cli(TestDatabase db, String... args) {
        List<String> all = new ArrayList<>(List.of("--url", url(db), "--schema", db.schema()));
        all.addAll(List.of(args));
        return cli(all.toArray(String[]::new));
    }

    @Test
    void badCommandLinesExitWithTwo(TestDatabase db) {
        Run unknown = cli("bogus");
        assertThat(unknown.code()).isEqualTo(RiffleCli.USAGE);
        assertThat(unknown.err()).contains("Unmatched argument");
        assertThat(cli(db, "doctor", "--no-such-option").code()).isEqualTo(RiffleCli.USAGE);
        assertThat(cli(db).code()).as("no subcommand").isEqualTo(RiffleCli.USAGE);
        assertThat(cli(db, "dlq").code()).as("no dlq subcommand").isEqualTo(RiffleCli.USAGE);
        Run badQueue = cli(db, "queue", "pause", "not a queue name!");
        assertThat(badQueue.code()).isEqualTo(RiffleCli.USAGE);
        assertThat(badQueue.err()).contains("queue");
        assertThat(cli(db, "dlq", "retry").code()).as("neither ids nor a filter").isEqualTo(RiffleCli.USAGE);
        assertThat(cli("--url", "mysql://nowhere/x", "status").code()).as("not a PostgreSQL URL").isEqualTo(RiffleCli.USAGE);
        assertThat(cli("--help").code()).isEqualTo(RiffleCli.OK);
        assumeTrue(System.getenv("RIFFLE_URL") == null, "RIFFLE_URL is set in this environment");
        Run noUrl = cli("status");
        assertThat(noUrl.code()).isEqualTo(RiffleCli.USAGE);
        assertThat(noUrl.err()).contains("--url");
    }

    @Test
    void anUnreachableDatabaseExitsWithThree(TestDatabase db) {
        // Port 1 on the loopback: refused at once.
        Run status = cli("--url", "postgresql://postgres@127.0.0.1:1/" + db.url().database(), "--schema", db.schema(), "status");
        assertThat(status.code()).as(status.err()).isEqualTo(RiffleCli.CANNOT_CONNECT);
        assertThat(status.err()).startsWith("riffle: cannot connect to the database");
        Run migrate = cli("--url", "postgresql://postgres@127.0.0.1:1/" + db.url().database(), "--schema", db.schema(), "migrate");
        assertThat(migrate.code()).as(migrate.err()).isEqualTo(RiffleCli.CANNOT_CONNECT);
        Run noDb = cli("--url", url(db).replaceFirst("/[^/]+$", "/riffle_cli_no_such_database"), "doctor");
        assertThat(noDb.code()).as(noDb.err()).isEqualTo(RiffleCli.CANNOT_CONNECT);
    }

    @Test
    void aSchemaThatIsNotMigratedExitsWithFourUntilMigratedAndADoctorWithAViolationWithOne(TestDatabase db) {
        String schema = db.schema() + "_fresh";
        try {
            Run before = cli("--url", url(db), "--schema", schema, "status");
            assertThat(before.code()).as(before.err()).isEqualTo(RiffleCli.NOT_MIGRATED);
            assertThat(before.err()).contains("not migrated");

            Run migrate = cli("--url", url(db), "--schema", schema, "migrate", "--claim-slots", "2", "--queue-slots", "4");
            assertThat(migrate.code()).as(migrate.err()).isEqualTo(RiffleCli.OK);
            assertThat(migrate.out()).startsWith("schema " + schema + ": ").contains("migration(s) applied");
            Run again = cli("--url", url(db), "--schema", schema, "--json", "migrate");
            assertThat(again.code()).isEqualTo(RiffleCli.OK);
            assertThat(again.out()).contains("\"migrationsExecuted\":0");

            Run status = cli("--url", url(db), "--schema", schema, "status");
            assertThat(status.code()).as(status.err()).isEqualTo(RiffleCli.OK);
            assertThat(status.out()).contains("no queues").contains("claim");

            // A violated invariant (rows of another generation in queue slot 0) makes the doctor exit with 1.
            assertThat(cli("--url", url(db), "--schema", schema, "doctor").code()).isEqualTo(RiffleCli.OK);
            db.execute("INSERT INTO \"" + schema + "\".ready_tombstones (ready_slot, ready_generation, queue, priority, "
                    + "enqueue_shard, lane_seq, job_id, tombstoned_at) VALUES (0, 4, 'gen', 1, 0, 1, 1, now())");
            Run text = cli("--url", url(db), "--schema", schema, "doctor");
            assertThat(text.code()).isEqualTo(RiffleCli.FAILED);
            assertThat(text.out()).startsWith("doctor: 1 violation(s)")
                    .contains("VIOLATION generation queue slot 0: ready_tombstones_0 holds rows of generation 4");
            Run json = cli("--url", url(db), "--schema", schema, "--json", "doctor");
            assertThat(json.code()).isEqualTo(RiffleCli.FAILED);
            assertThat(json.out()).startsWith("{\"ok\":false,\"violations\":[{\"check\":\"generation\",\"ring\":\"queue\",\"slot\":0,");
        } finally {
            db.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
        }
    }

    @Test
    void statusListsQueuesRingsAndTheLeaderAsTextAndJson(TestDatabase db, Riffle riffle) {
        riffle.client().enqueueMany(List.of(NewJob.builder("cli.job").queue("cli_status").args("{}").build(),
                NewJob.builder("cli.job").queue("cli_status").args("{}").build())).block(TIMEOUT);
        Run text = cli(db, "status");
        assertThat(text.code()).as(text.err()).isEqualTo(RiffleCli.OK);
        assertThat(text.out()).contains("maintenance leader").containsPattern("cli_status\\s+2\\s+0\\s+0\\s+0\\s+running")
                .contains("RING").containsPattern("queue\\s+\\d+\\s+\\d+\\s+4\\s+\\[");
        // --json before or after the subcommand
        for (Run json : List.of(cli(db, "status", "--json"), cli(db, "--json", "status"))) {
            assertThat(json.code()).isEqualTo(RiffleCli.OK);
            assertThat(json.out().strip()).startsWith("{\"schema\":\"" + db.schema() + "\",\"leader\":")
                    .contains("{\"queue\":\"cli_status\",\"available\":2,\"inFlight\":0,\"scheduled\":0,\"completed\":0,\"paused\":false}")
                    // the injected engine runs maintenance, so the rings may have rotated by now
                    .containsPattern("\\{\"ring\":\"claim\",\"currentSlot\":[01],\"generation\":\\d+,\"slotCount\":2,\"sealedSlots\":\\[[01]?]}")
                    .endsWith("}");
        }
    }

    @Test
    void queuesArePausedAndResumed(TestDatabase db) {
        Run pause = cli(db, "queue", "pause", "cli_pause");
        assertThat(pause.code()).isEqualTo(RiffleCli.OK);
        assertThat(pause.out().strip()).isEqualTo("queue cli_pause paused");
        assertThat(cli(db, "queue", "pause", "cli_pause").out().strip()).isEqualTo("queue cli_pause was paused already");
        assertThat(cli(db, "status").out()).containsPattern("cli_pause\\s+0\\s+0\\s+0\\s+0\\s+paused");
        Run resume = cli(db, "--json", "queue", "resume", "cli_pause");
        assertThat(resume.out().strip()).isEqualTo("{\"queue\":\"cli_pause\",\"changed\":true}");
        assertThat(cli(db, "queue", "resume", "cli_pause").out().strip()).isEqualTo("queue cli_pause was not paused");
    }

    @Test
    void dlqEntriesAreListedRetriedAndPurged(TestDatabase db, Riffle riffle) {
        List<Long> ids = riffle.client().enqueueMany(List.of(
                NewJob.builder("cli.dead").queue("cli_dlq").args("{\"n\":1}").build(),
                NewJob.builder("cli.dead").queue("cli_dlq").args("{\"n\":2}").build())).block(TIMEOUT);
        for (Job j : riffle.subscribe("cli_dlq").take(2).collectList().block(TIMEOUT)) {
            j.fail("boom").block(TIMEOUT);
        }
        Run list = cli(db, "dlq", "list", "--queue", "cli_dlq");
        assertThat(list.code()).as(list.err()).isEqualTo(RiffleCli.OK);
        assertThat(list.out()).contains("JOB_ID").contains(ids.get(0) + " ").contains(ids.get(1) + " ").contains("cli.dead");
        Run json = cli(db, "dlq", "list", "--queue", "cli_dlq", "--json", "--limit", "1");
        assertThat(json.out().strip()).startsWith("[{\"jobId\":" + ids.get(0) + ",\"queue\":\"cli_dlq\",\"kind\":\"cli.dead\"")
                .contains("\"args\":{\"n\": 1}").doesNotContain("\"jobId\":" + ids.get(1));

        Run retry = cli(db, "dlq", "retry", Long.toString(ids.get(0)), "987654321");
        assertThat(retry.code()).as("one id was not in the DLQ").isEqualTo(RiffleCli.FAILED);
        assertThat(retry.out()).contains("retried 1 DLQ entry: [" + ids.get(0) + "]").contains("not in the DLQ: [987654321]");
        Run purge = cli(db, "--json", "dlq", "purge", "--queue", "cli_dlq");
        assertThat(purge.code()).isEqualTo(RiffleCli.OK);
        assertThat(purge.out().strip()).isEqualTo("{\"purged\":[" + ids.get(1) + "],\"notFound\":[]}");
        assertThat(cli(db, "dlq", "list", "--queue", "cli_dlq").out()).contains("no DLQ entries in queue cli_dlq");
    }

    @Test
    void aJobIsShownWithItsStateAndErrors(TestDatabase db, Riffle riffle) {
        long id = riffle.client().enqueue(NewJob.builder("cli.show").queue("cli_show").args("{\"x\":7}").build())
                .block(TIMEOUT);
        Run ready = cli(db, "job", "show", Long.toString(id));
        assertThat(ready.code()).as(ready.err()).isEqualTo(RiffleCli.OK);
        assertThat(ready.out()).startsWith("job " + id + ": available").contains("kind          cli.show")
                .contains("queue         cli_show (priority ").contains("args          {\"x\": 7}");

        riffle.subscribe("cli_show").take(1).concatMap(j -> j.fail("no such customer")).blockLast(TIMEOUT);
        Run dead = cli(db, "job", "show", Long.toString(id));
        assertThat(dead.out()).startsWith("job " + id + ": dlq").contains("attempt 1 at ").contains("no such customer");
        Run json = cli(db, "--json", "job", "show", Long.toString(id));
        assertThat(json.code()).isEqualTo(RiffleCli.OK);
        assertThat(json.out().strip()).startsWith("{\"id\":" + id + ",\"state\":\"dlq\",\"kind\":\"cli.show\",\"queue\":\"cli_show\"")
                .contains("\"args\":{\"x\": 7}").contains("\"message\":\"no such customer\"");

        Run unknown = cli(db, "job", "show", "987654321");
        assertThat(unknown.code()).isEqualTo(RiffleCli.FAILED);
        assertThat(unknown.out()).contains("job 987654321 not found");
        assertThat(cli(db, "job", "show", "not-a-number").code()).isEqualTo(RiffleCli.USAGE);
    }

    @Test
    void aCleanDoctorExitsWithZero(TestDatabase db) {
        Run text = cli(db, "doctor");
        assertThat(text.code()).as(text.out() + text.err()).isEqualTo(RiffleCli.OK);
        assertThat(text.out()).startsWith("doctor: ok, no invariant violated").contains("next prune of each ring:")
                .containsPattern("claim\\s+slot \\d: ");
        Run json = cli(db, "doctor", "--json");
        assertThat(json.code()).isEqualTo(RiffleCli.OK);
        assertThat(json.out().strip()).startsWith("{\"ok\":true,\"violations\":[],").contains("\"rings\":[{\"ring\":\"queue\"");
    }

    @Test
    void theDashboardServesTheSchemaUntilStopped(TestDatabase db) throws Exception {
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
            port = free.getLocalPort();
        }
        java.util.concurrent.CompletableFuture<Run> run = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> cli(db, "dashboard", "--port", Integer.toString(port), "--read-only", "--run-for", "PT3S"));
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        java.net.http.HttpRequest status = java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://127.0.0.1:" + port + "/riffle/api/status")).build();
        String body = null;
        while (body == null && !run.isDone()) {
            try {
                java.net.http.HttpResponse<String> r = http.send(status, java.net.http.HttpResponse.BodyHandlers.ofString());
                body = r.statusCode() == 200 ? r.body() : null;
            } catch (java.net.ConnectException notYet) {
                reactor.core.publisher.Mono.delay(Duration.ofMillis(50)).block();
            }
        }
        assertThat(body).as("the dashboard answered while it ran").isNotNull()
                .contains("\"schema\":\"" + db.schema() + "\"").contains("\"readOnly\":true");
        Run done = run.get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(done.code()).as(done.err()).isEqualTo(RiffleCli.OK);
        assertThat(done.out()).contains("Riffle dashboard for schema " + db.schema() + " at http://127.0.0.1:" + port
                + "/riffle/ (read-only)");
    }
}
