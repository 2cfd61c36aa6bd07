package dev.riffle.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.CancelResult;
import dev.riffle.examples.TestDatabases;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class OrdersAppTest {

    // Not the app's default schemas, so a test run never resets a demo someone is running on the same database.
    private static final String RIFFLE_SCHEMA = "riffle_orders_test";
    private static final String APP_SCHEMA = "orders_example_test";
    // Generous: the machine this runs on may be busy; a healthy run completes the job in well under a second.
    private static final Duration COMPLETION_WAIT = Duration.ofSeconds(60);

    private static OrdersApp app;
    private static HttpClient http;
    private static final JsonMapper json = JsonMapper.builder().build();

    @BeforeAll
    static void start() throws Exception {
        app = OrdersApp.start(new OrdersApp.Settings(0, TestDatabases.url(), RIFFLE_SCHEMA, APP_SCHEMA));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    @Test
    void placedOrderIsFulfilledByTheWorker() throws Exception {
        HttpResponse<String> placed = post("/orders", "{\"item\":\"book\",\"quantity\":2}");
        assertThat(placed.statusCode()).as(placed.body()).isEqualTo(201);
        JsonNode body = json.readTree(placed.body());
        long orderId = body.get("orderId").asLong();
        long jobId = body.get("jobId").asLong();
        assertThat(placed.headers().firstValue("Location")).hasValue("/orders/" + orderId);

        JsonNode order = awaitCompleted(orderId);
        assertThat(order.get("item").asString()).isEqualTo("book");
        assertThat(order.get("quantity").asInt()).isEqualTo(2);
        assertThat(order.get("jobId").asLong()).isEqualTo(jobId);
        assertThat(order.get("jobState").asString()).isEqualTo("completed");
        // The worker fulfils before it completes, so a completed job's order is always fulfilled.
        assertThat(order.get("fulfilledAt").isNull()).as(order.toString()).isFalse();
    }

    @Test
    void rolledBackOrderLeavesNeitherOrderNorJob() throws Exception {
        HttpResponse<String> failed = post("/orders?fail=true", "{\"item\":\"doomed\",\"quantity\":1}");
        assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
        JsonNode body = json.readTree(failed.body());
        long orderId = body.get("rolledBackOrderId").asLong();
        long jobId = body.get("rolledBackJobId").asLong();
        // Both ids exist only because the enqueue really ran inside the transaction before it failed.
        assertThat(orderId).isPositive();
        assertThat(jobId).isPositive();

        assertThat(get("/orders/" + orderId).statusCode()).isEqualTo(404);
        // Had the job committed, it would now be live (cancel finds it) or finished; finished history outlives
        // these few milliseconds by seconds, so the two checks together leave it nowhere to hide.
        assertThat(app.riffle().admin().cancel(jobId).block(Duration.ofSeconds(30))).isEqualTo(CancelResult.NOT_FOUND);
        try (Connection c = app.database().jdbc()) {
            assertThat(count(c, "SELECT count(*) FROM \"" + RIFFLE_SCHEMA + "\".terminal_jobs WHERE job_id = ?", jobId))
                    .isZero();
            assertThat(count(c, "SELECT count(*) FROM \"" + APP_SCHEMA + "\".orders WHERE id = ?", orderId)).isZero();
        }
    }

    @Test
    void invalidOrdersAreRejectedBeforeAnyWrite() throws Exception {
        long ordersBefore = orderRows();
        assertThat(post("/orders", "{\"item\":\"\",\"quantity\":1}").statusCode()).isEqualTo(400);
        assertThat(post("/orders", "{\"item\":\"pen\",\"quantity\":0}").statusCode()).isEqualTo(400);
        assertThat(post("/orders", "not json").statusCode()).isEqualTo(400);
        assertThat(get("/orders/not-a-number").statusCode()).isEqualTo(400);
        assertThat(orderRows()).isEqualTo(ordersBefore);
        HttpResponse<String> counts = get("/jobs/counts");
        assertThat(counts.statusCode()).isEqualTo(200);
        JsonNode c = json.readTree(counts.body());
        assertThat(c.get("available").asLong() + c.get("inFlight").asLong()).as(counts.body()).isZero();
    }

    /** Polls the order until its job is completed, failing after {@link #COMPLETION_WAIT}. */
    private static JsonNode awaitCompleted(long orderId) throws Exception {
        long deadline = System.nanoTime() + COMPLETION_WAIT.toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            HttpResponse<String> response = get("/orders/" + orderId);
            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            last = json.readTree(response.body());
            if (last.get("jobCompleted").asBoolean()) {
                return last;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("order " + orderId + "'s job not completed within " + COMPLETION_WAIT
                + "; last: " + last);
    }

    private static long orderRows() throws Exception {
        try (Connection c = app.database().jdbc();
             PreparedStatement st = c.prepareStatement("SELECT count(*) FROM \"" + APP_SCHEMA + "\".orders");
             ResultSet rs = st.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void theCallbackWebhookResumesAParkedJobOnceAndRejectsWhatItCannotUse() throws Exception {
        // A job on a queue of the test's own, whose handler registers a callback and parks on it.
        String queue = "approvals";
        app.riffle().client().enqueue(dev.riffle.engine.api.NewJob.builder("approval").queue(queue).build())
                .block(COMPLETION_WAIT);
        java.util.concurrent.CompletableFuture<dev.riffle.engine.api.ExternalCallback> registered =
                new java.util.concurrent.CompletableFuture<>();
        java.util.concurrent.CompletableFuture<String> resumedWith = new java.util.concurrent.CompletableFuture<>();
        reactor.core.Disposable handler = app.riffle().subscribe(queue)
                .flatMap(job -> job.registerCallback(Duration.ofMinutes(5))
                        .doOnNext(registered::complete)
                        .flatMap(dev.riffle.engine.api.ExternalCallback::await)
                        .doOnNext(resumedWith::complete)
                        .then(job.complete()), 1, 1)
                .subscribe();
        try {
            String id = registered.get(COMPLETION_WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS).id().toString();

            assertThat(post("/callbacks/not-a-uuid", "{}").statusCode()).isEqualTo(400);
            assertThat(post("/callbacks/" + id, "[1,2]").statusCode()).as("not an object").isEqualTo(400);
            assertThat(post("/callbacks/" + java.util.UUID.randomUUID(), "{}").statusCode()).isEqualTo(404);
            assertThat(resumedWith).as("nothing above resumed the job").isNotDone();

            HttpResponse<String> accepted = post("/callbacks/" + id, "{\"approved\":true}");
            assertThat(accepted.statusCode()).as(accepted.body()).isEqualTo(202);
            assertThat(json.readTree(resumedWith.get(COMPLETION_WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS))
                    .get("approved").asBoolean()).isTrue();
            HttpResponse<String> again = post("/callbacks/" + id, "{\"approved\":false}");
            assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
        } finally {
            handler.dispose();
        }
    }

    private static long count(Connection c, String sql, long id) throws Exception {
        try (PreparedStatement st = c.prepareStatement(sql)) {
            st.setLong(1, id);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static HttpResponse<String> post(String path, String jsonBody) throws Exception {
        return http.send(HttpRequest.newBuilder(uri(path))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(jsonBody))
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + app.port() + path);
    }
}
