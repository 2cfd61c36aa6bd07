package dev.riffle.examples.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webtestclient.autoconfigure.AutoConfigureWebTestClient;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The shop end to end over HTTP: an order placed in a transaction enqueues its job, which the handler bean runs; an
 * order that fails after the enqueue rolls back both, and its job never runs; readiness includes Riffle.
 *
 * <p>{@code @RiffleTest} (declared first, so its schema outlives the context) finds the test database the same way
 * the engine's own suites do (RIFFLE_TEST_DATABASE_URL, a server on 127.0.0.1:5432, Testcontainers, embedded) and
 * gives this class its own schema; the app's spring.r2dbc.* and riffle.schema point there.
 * {@code @DirtiesContext} closes the context (and the engine, gracefully) after the class, before the schema is dropped.
 */
@RiffleTest
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@AutoConfigureWebTestClient
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class ShopApplicationTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static TestDatabase database;

    @Autowired
    WebTestClient http;
    @Autowired
    ConfirmOrderHandler handler;
    @Autowired
    Riffle riffle;

    @BeforeAll
    static void database(TestDatabase db) {
        database = db;
    }

    @DynamicPropertySource
    static void databaseProperties(DynamicPropertyRegistry registry) {
        registry.add("spring.r2dbc.url", () -> "r2dbc:postgresql://" + database.url().host() + ":"
                + database.url().port() + "/" + database.url().database());
        registry.add("spring.r2dbc.username", () -> database.url().user());
        registry.add("spring.r2dbc.password", () -> database.url().password() == null ? "" : database.url().password());
        registry.add("riffle.schema", () -> database.schema());
        registry.add("shop.schema", () -> database.schema() + "_shop");
    }

    @Test
    void anOrderPlacedOverHttpIsConfirmedByItsJob() {
        OrderController.PlacedOrder placed = http.post().uri("/orders")
                .bodyValue(Map.of("item", "teapot", "quantity", 2))
                .exchange()
                .expectStatus().isCreated()
                .expectBody(OrderController.PlacedOrder.class).returnResult().getResponseBody();
        assertThat(placed).isNotNull();

        await().atMost(WAIT).until(() -> handler.handledJobs().contains(placed.jobId()));
        Map<String, Object> order = http.get().uri("/orders/{id}", placed.orderId()).exchange()
                .expectStatus().isOk()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {}).returnResult().getResponseBody();
        assertThat(order).containsEntry("item", "teapot");
        assertThat(((Number) order.get("confirmedByJob")).longValue()).isEqualTo(placed.jobId());
    }

    @Test
    void anOrderThatFailsAfterTheEnqueueRollsBackItsJob() {
        Map<String, Object> failed = http.post().uri("/orders")
                .bodyValue(Map.of("item", "glass vase", "quantity", 1, "simulateFailure", true))
                .exchange()
                .expectStatus().is5xxServerError()
                .expectBody(new ParameterizedTypeReference<Map<String, Object>>() {}).returnResult().getResponseBody();
        assertThat(failed).containsKeys("orderId", "jobId");
        long rolledBackOrder = ((Number) failed.get("orderId")).longValue();
        long rolledBackJob = ((Number) failed.get("jobId")).longValue();
        http.get().uri("/orders/{id}", rolledBackOrder).exchange().expectStatus().isNotFound();

        // A later order on the same queue runs; once nothing is pending any more, the rolled-back job can never run.
        OrderController.PlacedOrder later = http.post().uri("/orders").bodyValue(Map.of("item", "mug", "quantity", 1))
                .exchange().expectStatus().isCreated()
                .expectBody(OrderController.PlacedOrder.class).returnResult().getResponseBody();
        assertThat(later).isNotNull();
        await().atMost(WAIT).until(() -> handler.handledJobs().contains(later.jobId()));
        await().atMost(WAIT).untilAsserted(() -> {
            QueueCounts counts = riffle.counts("default").block(WAIT);
            assertThat(counts.available() + counts.inFlight() + counts.scheduled()).isZero();
        });
        assertThat(handler.handledJobs()).doesNotContain(rolledBackJob);
    }

    @Test
    void readinessIncludesRiffle() {
        await().atMost(WAIT).untilAsserted(() -> http.get().uri("/actuator/health/readiness").exchange()
                .expectStatus().isOk()
                .expectBody()
                .jsonPath("$.status").isEqualTo("UP")
                .jsonPath("$.components.riffle.status").isEqualTo("UP")
                .jsonPath("$.components.riffle.details.schema").isEqualTo(database.schema())
                .jsonPath("$.components.riffle.details.listening").isEqualTo(true)
                .jsonPath("$.components.riffle.details.leaderKnown").isEqualTo(true));
    }
}
