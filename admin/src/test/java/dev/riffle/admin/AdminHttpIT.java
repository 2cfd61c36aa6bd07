package dev.riffle.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import tools.jackson.databind.JsonNode;

/**
 * The admin API over real HTTP against a real engine: JSON shapes, the sampler's counts and rates, search, the DLQ
 * and queue actions, and every refusal (404, 405 on a GET of an action, 403 read-only, without the action header and
 * from the authorization hook, 400 on bad input). One engine and three servers for the class.
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminHttpIT {

    private Riffle riffle;
    private DisposableServer server;
    private DisposableServer readOnly;
    private DisposableServer guarded;
    private Http http;

    @BeforeAll
    void start(Riffle riffle) {
        this.riffle = riffle;
        AdminHttpOptions.Builder fast = AdminHttpOptions.builder().port(0).sampleInterval(Duration.ofMillis(100))
                .history(Duration.ofSeconds(30));
        server = RiffleAdminHttp.start(riffle, fast.build()).block(Http.TIMEOUT);
        readOnly = RiffleAdminHttp.start(riffle, fast.readOnly(true).build()).block(Http.TIMEOUT);
        // reads need a token, actions the operator's
        guarded = RiffleAdminHttp.start(riffle, fast.readOnly(false).authorizer((req, access) -> {
            String auth = java.util.Objects.requireNonNullElse(req.header("Authorization"), "");
            return Mono.just(auth.equals("Bearer operator")
                    || (access == AdminAuthorizer.Access.READ && auth.equals("Bearer viewer")));
        }).build()).block(Http.TIMEOUT);
        http = new Http(server);
    }

    @AfterAll
    void stop() {
        for (DisposableServer s : new DisposableServer[] {server, readOnly, guarded}) {
            if (s != null) {
                s.disposeNow();
            }
        }
    }

    private static JsonNode await(java.util.function.Supplier<JsonNode> read, Predicate<JsonNode> until, String what) {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            last = read.get();
            if (until.test(last)) {
                return last;
            }
            Mono.delay(Duration.ofMillis(50)).block();
        }
        throw new AssertionError("timed out waiting for " + what + "; last: " + last);
    }

    private static JsonNode queue(JsonNode queues, String name) {
        for (JsonNode q : queues.get("queues")) {
            if (q.get("queue").asString().equals(name)) {
                return q;
            }
        }
        return null;
    }

    private long dead(String queue, String kind, String reason) {
        long id = riffle.client().enqueue(NewJob.builder(kind).queue(queue).args("{\"n\":1}").build()).block(Http.TIMEOUT);
        riffle.subscribe(queue).take(1).concatMap(j -> j.fail(reason)).blockLast(Http.TIMEOUT);
        return id;
    }

    @Test
    void theQueueTableFollowsEnqueuesAndCompletionsWithRates() {
        riffle.client().enqueueMany(List.of(NewJob.builder("h.count").queue("h_count").build(),
                NewJob.builder("h.count").queue("h_count").build(),
                NewJob.builder("h.count").queue("h_count").build())).block(Http.TIMEOUT);
        JsonNode table = await(() -> http.get("/riffle/api/queues").json(),
                t -> queue(t, "h_count") != null && queue(t, "h_count").get("available").asLong() == 3, "3 available");
        JsonNode q = queue(table, "h_count");
        assertThat(table.get("sampledAt").asString()).isNotEmpty();
        assertThat(table.get("intervalMs").asLong()).isEqualTo(100);
        assertThat(table.get("readOnly").asBoolean()).isFalse();
        for (String field : List.of("inFlight", "scheduled", "completed", "dlq", "oldestAvailableAgeSeconds",
                "completedPerSecond", "paused")) {
            assertThat(q.has(field)).as(field).isTrue();
        }

        for (Job j : riffle.subscribe("h_count").take(3).collectList().block(Http.TIMEOUT)) {
            j.complete().block(Http.TIMEOUT);
        }
        JsonNode after = await(() -> http.get("/riffle/api/queues").json(),
                t -> queue(t, "h_count").get("completed").asLong() == 3, "3 completed");
        assertThat(queue(after, "h_count").get("available").asLong()).isZero();
        // the table's rate covers the last few samples only (QueueSamplerTest); the chart keeps the whole history
        JsonNode metrics = http.get("/riffle/api/metrics").json();
        assertThat(metrics.get("historySeconds").asLong()).isEqualTo(30);
        assertThat(metrics.get("points").valueStream().mapToDouble(p -> p.get("completedPerSecond").asDouble()).max()
                .orElse(0)).as("the chart's throughput saw the completions").isPositive();
        assertThat(metrics.get("points").get(0).has("oldestAvailableAgeSeconds")).isTrue();

        JsonNode fresh = http.get("/riffle/api/queues/h_count").json();
        assertThat(fresh.get("completed").asLong()).isEqualTo(3);
        assertThat(fresh.get("dlq").asLong()).isZero();
    }

    @Test
    void aJobIsLookedUpAndSearchedByQueueKindAndState() {
        long c = dead("h_find", "h.find", "no such customer");
        long a = riffle.client().enqueue(NewJob.builder("h.find").queue("h_find").args("{\"x\":7}").build()).block(Http.TIMEOUT);
        long b = riffle.client().enqueue(NewJob.builder("h.other").queue("h_find").build()).block(Http.TIMEOUT);

        JsonNode job = http.get("/riffle/api/jobs/" + a).json();
        assertThat(job.get("id").asLong()).isEqualTo(a);
        assertThat(job.get("state").asString()).isEqualTo("available");
        assertThat(job.get("args").get("x").asInt()).isEqualTo(7);
        JsonNode deadJob = http.get("/riffle/api/jobs/" + c).json();
        assertThat(deadJob.get("state").asString()).isEqualTo("dlq");
        assertThat(deadJob.get("dlqReason").asString()).contains("no such customer");
        assertThat(deadJob.get("errors").get(0).get("attempt").asInt()).isEqualTo(1);
        Http.Response unknown = http.get("/riffle/api/jobs/987654321");
        assertThat(unknown.status()).isEqualTo(404);
        assertThat(unknown.json().get("error").asString()).isEqualTo("not_found");

        assertThat(ids(http.get("/riffle/api/jobs?queue=h_find").json())).containsExactly(b, a, c);
        assertThat(ids(http.get("/riffle/api/jobs?queue=h_find&kind=h.find").json())).containsExactly(a, c);
        assertThat(ids(http.get("/riffle/api/jobs?queue=h_find&state=available").json())).containsExactly(b, a);
        assertThat(ids(http.get("/riffle/api/jobs?queue=h_find&state=dlq").json())).containsExactly(c);
        assertThat(ids(http.get("/riffle/api/dlq?queue=h_find").json())).containsExactly(c);
        // keyset paging: a page of one, then the next below it
        JsonNode first = http.get("/riffle/api/jobs?queue=h_find&limit=1").json();
        assertThat(ids(first)).containsExactly(b);
        assertThat(ids(http.get("/riffle/api/jobs?queue=h_find&limit=1&before=" + first.get("nextBefore").asLong())
                .json())).containsExactly(a);
        JsonNode last = http.get("/riffle/api/jobs?queue=h_find&before=" + c).json();
        assertThat(ids(last)).isEmpty();
        assertThat(last.get("nextBefore").isNull()).isTrue();
        // the engine's own page agrees
        assertThat(riffle.admin().searchJobs("h_find", null, JobState.AVAILABLE, 0, 10).block(Http.TIMEOUT).jobs())
                .extracting(dev.riffle.engine.api.JobInfo::id).containsExactly(b, a);
    }

    private static List<Long> ids(JsonNode page) {
        return page.get("jobs").valueStream().map(j -> j.get("id").asLong()).toList();
    }

    @Test
    void dlqEntriesAreRetriedAndPurgedByPostOnly() {
        long retried = dead("h_dlq", "h.dead", "boom");
        long purged = dead("h_dlq", "h.dead", "boom");

        Http.Response get = http.get("/riffle/api/dlq/" + retried + "/retry");
        assertThat(get.status()).as("an action is never a GET").isEqualTo(405);
        assertThat(get.headers().get("Allow")).isEqualTo("POST");
        Http.Response noHeader = http.call(HttpMethod.POST, "/riffle/api/dlq/" + retried + "/retry", Map.of());
        assertThat(noHeader.status()).isEqualTo(403);
        assertThat(noHeader.json().get("error").asString()).isEqualTo("missing_header");
        assertThat(http.call(HttpMethod.POST, "/riffle/api/queues", Map.of()).status())
                .as("a read is never a POST").isEqualTo(405);
        assertThat(riffle.admin().job(retried).block(Http.TIMEOUT).state()).as("nothing happened yet").isEqualTo(JobState.DLQ);

        Http.Response retry = http.post("/riffle/api/dlq/" + retried + "/retry");
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.json().get("result").asString()).isEqualTo("retried");
        assertThat(riffle.admin().job(retried).block(Http.TIMEOUT).state()).isNotEqualTo(JobState.DLQ);
        assertThat(http.post("/riffle/api/dlq/" + retried + "/retry").status()).as("not in the DLQ any more").isEqualTo(404);

        assertThat(http.post("/riffle/api/dlq/" + purged + "/purge").json().get("result").asString()).isEqualTo("purged");
        assertThat(riffle.admin().listDlq("h_dlq", 0, 10).map(e -> e.jobId()).collectList().block(Http.TIMEOUT))
                .doesNotContain(purged);

        long bulk = dead("h_bulk", "h.bulk", "boom");
        JsonNode all = http.post("/riffle/api/queues/h_bulk/dlq/retry?kind=h.bulk").json();
        assertThat(all.get("retried").valueStream().map(JsonNode::asLong).toList()).containsExactly(bulk);
    }

    @Test
    void queuesArePausedAndResumedAndJobsCancelled() {
        long id = riffle.client().enqueue(NewJob.builder("h.cancel").queue("h_ops").build()).block(Http.TIMEOUT);
        JsonNode pause = http.post("/riffle/api/queues/h_ops/pause").json();
        assertThat(pause.get("paused").asBoolean()).isTrue();
        assertThat(pause.get("changed").asBoolean()).isTrue();
        assertThat(riffle.counts("h_ops").block(Http.TIMEOUT).paused()).isTrue();
        assertThat(http.post("/riffle/api/queues/h_ops/pause").json().get("changed").asBoolean()).isFalse();
        assertThat(http.post("/riffle/api/queues/h_ops/resume").json().get("changed").asBoolean()).isTrue();
        assertThat(riffle.counts("h_ops").block(Http.TIMEOUT).paused()).isFalse();

        assertThat(http.post("/riffle/api/jobs/" + id + "/cancel").json().get("result").asString())
                .isEqualTo("cancelled_available");
        assertThat(riffle.admin().job(id).block(Http.TIMEOUT).state()).isEqualTo(JobState.CANCELLED);
        assertThat(http.post("/riffle/api/jobs/" + id + "/cancel").status()).isEqualTo(404);
    }

    @Test
    void statusAndDoctorAnswerInJson() {
        JsonNode status = http.get("/riffle/api/status").json();
        assertThat(status.get("schema").asString()).isEqualTo(riffle.config().schema());
        assertThat(status.has("leaderPresent")).isTrue();
        assertThat(status.get("rings").valueStream().map(r -> r.get("ring").asString()).toList())
                .contains("queue", "lease", "claim");
        assertThat(status.get("rings").get(0).get("slotCount").asInt()).isPositive();
        JsonNode doctor = http.get("/riffle/api/doctor").json();
        assertThat(doctor.get("ok").asBoolean()).as(doctor.toString()).isTrue();
        assertThat(doctor.get("rings").size()).isEqualTo(3);
    }

    @Test
    void badInputIsA400ThatNamesTheField() {
        Map<String, String> cases = Map.of(
                "/riffle/api/jobs/abc", "id",
                "/riffle/api/jobs/0", "id",
                "/riffle/api/jobs/99999999999999999999", "id",
                "/riffle/api/jobs?state=lost", "state",
                "/riffle/api/jobs?limit=0", "limit",
                "/riffle/api/jobs?before=-1", "before",
                "/riffle/api/jobs?queue=-dash", "queue",
                "/riffle/api/queues/bad%20name", "queue",
                "/riffle/api/dlq?kind=" + "k".repeat(200), "kind");
        cases.forEach((path, field) -> {
            Http.Response r = http.get(path);
            assertThat(r.status()).as(path).isEqualTo(400);
            assertThat(r.json().get("error").asString()).as(path).isEqualTo("invalid");
            assertThat(r.json().get("field").asString()).as(path).isEqualTo(field);
        });
        assertThat(http.post("/riffle/api/jobs/x/cancel").status()).isEqualTo(400);
        assertThat(http.get("/riffle/api/nothing").status()).isEqualTo(404);
        assertThat(http.get("/riffle/api/nothing").json().get("error").asString()).isEqualTo("not_found");
    }

    @Test
    void readOnlyRefusesEveryActionAndSaysSo() {
        Http ro = new Http(readOnly);
        long id = dead("h_ro", "h.ro", "boom");
        for (String action : List.of("/riffle/api/dlq/" + id + "/retry", "/riffle/api/dlq/" + id + "/purge",
                "/riffle/api/jobs/" + id + "/cancel", "/riffle/api/queues/h_ro/pause", "/riffle/api/queues/h_ro/resume",
                "/riffle/api/queues/h_ro/dlq/purge")) {
            Http.Response r = ro.post(action);
            assertThat(r.status()).as(action).isEqualTo(403);
            assertThat(r.json().get("error").asString()).isEqualTo("read_only");
        }
        assertThat(riffle.admin().job(id).block(Http.TIMEOUT).state()).isEqualTo(JobState.DLQ);
        assertThat(ro.get("/riffle/api/status").json().get("readOnly").asBoolean()).isTrue();
        assertThat(ro.get("/riffle/api/jobs/" + id).status()).as("reads still work").isEqualTo(200);
    }

    @Test
    void theAuthorizationHookIsAskedBeforeEveryRequest() {
        Http g = new Http(guarded);
        long id = dead("h_auth", "h.auth", "boom");
        assertThat(g.get("/riffle/").status()).as("the page too").isEqualTo(403);
        assertThat(g.get("/riffle/api/queues").status()).isEqualTo(403);
        assertThat(g.get("/riffle/api/queues", Map.of("Authorization", "Bearer viewer")).status()).isEqualTo(200);
        Map<String, String> viewer = Map.of("Authorization", "Bearer viewer", RiffleAdminHttp.ACTION_HEADER, "1");
        Http.Response denied = g.call(HttpMethod.POST, "/riffle/api/dlq/" + id + "/retry", viewer);
        assertThat(denied.status()).isEqualTo(403);
        assertThat(denied.json().get("error").asString()).isEqualTo("forbidden");
        assertThat(riffle.admin().job(id).block(Http.TIMEOUT).state()).isEqualTo(JobState.DLQ);
        Map<String, String> operator = Map.of("Authorization", "Bearer operator", RiffleAdminHttp.ACTION_HEADER, "1");
        assertThat(g.call(HttpMethod.POST, "/riffle/api/dlq/" + id + "/retry", operator).status()).isEqualTo(200);
    }

    @Test
    void theRoutesMountUnderAPrefixBesideTheApplicationsOwn() {
        RiffleAdminHttp admin = RiffleAdminHttp.create(riffle, AdminHttpOptions.builder().prefix("/ops/queues").build());
        DisposableServer app = HttpServer.create().host("127.0.0.1").port(0).route(routes -> {
            routes.get("/hello", (req, res) -> res.sendString(Mono.just("hi")));
            admin.routes().accept(routes);
        }).bindNow();
        try {
            Http h = new Http(app);
            assertThat(h.get("/hello").body()).isEqualTo("hi");
            h.assertServesThePageAt("/ops/queues");
            assertThat(h.get("/ops/queues/api/status").status()).isEqualTo(200);
            assertThat(h.get("/riffle/api/status").status()).as("nothing at the default prefix").isEqualTo(404);
        } finally {
            app.disposeNow();
            admin.dispose();
        }
    }
}
