package dev.riffle.examples.boot;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.NewJob;
import io.r2dbc.spi.ConnectionFactory;
import java.net.URI;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.r2dbc.connection.ConnectionFactoryUtils;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.transaction.reactive.TransactionalOperator;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /orders}: the order row and its confirmation job in one transaction of the app's own R2DBC pool
 * (Spring's {@link TransactionalOperator} over Boot's {@code R2dbcTransactionManager}); {@code GET /orders/{id}}.
 */
@RestController
@RequestMapping("/orders")
public class OrderController {

    /** The kind of job each order enqueues. */
    public static final String CONFIRM_KIND = "order.confirm";

    private final DatabaseClient db;
    private final ConnectionFactory connectionFactory;
    private final Riffle riffle;
    private final TransactionalOperator tx;
    private final JsonMapper json;
    private final ShopProperties shop;

    /** All of it from the context: the app's pool, the starter's engine, Boot's transaction manager and JSON. */
    public OrderController(DatabaseClient db, ConnectionFactory connectionFactory, Riffle riffle,
                           ReactiveTransactionManager transactions, JsonMapper json, ShopProperties shop) {
        this.db = db;
        this.connectionFactory = connectionFactory;
        this.riffle = riffle;
        this.tx = TransactionalOperator.create(transactions);
        this.json = json;
        this.shop = shop;
    }

    /**
     * The body of {@code POST /orders}.
     *
     * @param item what is ordered, 1..200 characters
     * @param quantity how many, 1..1000
     * @param simulateFailure demo only: fail after the job is enqueued, as a payment call might, so the whole
     *                        transaction (order and job) rolls back
     */
    public record OrderRequest(@Nullable String item, int quantity, boolean simulateFailure) {}

    /**
     * A placed order (or, with status 500, what was rolled back).
     *
     * @param orderId the order's id
     * @param jobId the id of the job enqueued with it
     */
    public record PlacedOrder(long orderId, long jobId) {}

    /** Places an order: 201 with the ids, 400 for a bad body, 500 (with the rolled-back ids) for a failure. */
    @PostMapping
    public Mono<ResponseEntity<Object>> place(@RequestBody OrderRequest request) {
        String item = request.item();
        if (item == null || item.isBlank() || item.length() > 200) {
            return Mono.just(ResponseEntity.badRequest().body(Map.of("error", "item must be 1..200 characters")));
        }
        if (request.quantity() < 1 || request.quantity() > 1000) {
            return Mono.just(ResponseEntity.badRequest().body(Map.of("error", "quantity must be 1..1000")));
        }
        Mono<PlacedOrder> placeAndEnqueue = db.sql("INSERT INTO " + shop.ordersTable()
                        + " (item, quantity) VALUES (:item, :quantity) RETURNING id")
                .bind("item", item).bind("quantity", request.quantity())
                .map(row -> row.get("id", Long.class)).one()
                // The transaction's own connection: the job commits or rolls back with the order row.
                .flatMap(orderId -> ConnectionFactoryUtils.getConnection(connectionFactory)
                        .flatMap(connection -> riffle.client().enqueue(connection, NewJob.builder(CONFIRM_KIND)
                                .args(json.writeValueAsString(Map.of("orderId", orderId, "item", item))).build()))
                        .map(jobId -> new PlacedOrder(orderId, jobId)))
                .flatMap(placed -> request.simulateFailure()
                        ? Mono.error(new SimulatedFailure(placed))
                        : Mono.just(placed));
        return tx.transactional(placeAndEnqueue)
                .map(placed -> ResponseEntity.created(URI.create("/orders/" + placed.orderId())).<Object>body(placed))
                .onErrorResume(SimulatedFailure.class, e -> Mono.just(ResponseEntity
                        .status(HttpStatus.INTERNAL_SERVER_ERROR)
                        .body(Map.of("error", "failed after enqueue; order and job rolled back",
                                "orderId", e.placed.orderId(), "jobId", e.placed.jobId()))));
    }

    /** The order, with whether (and by which job) it was confirmed; 404 when there is none. */
    @GetMapping("/{id}")
    public Mono<ResponseEntity<Map<String, @Nullable Object>>> get(@PathVariable("id") long id) {
        return db.sql("SELECT id, item, quantity, created_at, confirmed_at, confirmed_by_job FROM " + shop.ordersTable()
                        + " WHERE id = :id")
                .bind("id", id)
                .map(row -> {
                    Map<String, @Nullable Object> order = new LinkedHashMap<>();
                    order.put("id", row.get("id", Long.class));
                    order.put("item", row.get("item", String.class));
                    order.put("quantity", row.get("quantity", Integer.class));
                    order.put("createdAt", row.get("created_at", OffsetDateTime.class));
                    order.put("confirmedAt", row.get("confirmed_at", OffsetDateTime.class));
                    order.put("confirmedByJob", row.get("confirmed_by_job", Long.class));
                    return order;
                })
                .one()
                .map(ResponseEntity::ok)
                .defaultIfEmpty(ResponseEntity.notFound().build());
    }

    /** The demo's failure after the enqueue. */
    static final class SimulatedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient PlacedOrder placed;

        SimulatedFailure(PlacedOrder placed) {
            super("simulated failure after enqueue (order " + placed.orderId() + ", job " + placed.jobId() + ")", null,
                    false, false);
            this.placed = placed;
        }
    }
}
