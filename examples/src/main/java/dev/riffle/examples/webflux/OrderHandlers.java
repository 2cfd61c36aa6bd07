package dev.riffle.examples.webflux;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.NewJob;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Readable;
import java.net.URI;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The HTTP side of {@link OrdersApp}: placing an order (the order row and its Riffle job in one transaction) and
 * reading it back together with its job's state.
 */
public final class OrderHandlers {

    /** The queue order jobs go to. */
    public static final String QUEUE = "orders";
    /** The kind of job each order enqueues. */
    public static final String JOB_KIND = "order.fulfil";

    /**
     * The body of {@code POST /orders}.
     *
     * @param item what is ordered, 1..200 characters
     * @param quantity how many, 1..1000
     */
    public record OrderRequest(@Nullable String item, int quantity) {}

    /**
     * The answer to a placed order.
     *
     * @param orderId the new order's id
     * @param jobId the id of the job enqueued with it
     */
    public record PlacedOrder(long orderId, long jobId) {}

    /**
     * An order as {@code GET /orders/{id}} returns it.
     *
     * <p>Riffle keeps terminal history only as long as the queue-ring segment it lives in: with the default
     * maintenance settings a completed job leaves {@code terminal_jobs} some seconds after it finished. So the job's
     * state here is what Riffle still knows, and {@code fulfilledAt} is the app's own lasting record of the work.
     *
     * @param id order id
     * @param item what was ordered
     * @param quantity how many
     * @param createdAt when the order committed
     * @param fulfilledAt when the worker fulfilled it, or {@code null} while it has not
     * @param jobId its fulfilment job
     * @param jobState the job's terminal state from {@code terminal_jobs} ({@code completed}, {@code failed},
     *     ...); {@code pending} when there is none and the order is not fulfilled; {@code fulfilled} when there is
     *     none but the order is (the completion is being written, or its history was already pruned)
     * @param jobCompleted whether {@code terminal_jobs} shows the job completed
     */
    public record OrderView(long id, String item, int quantity, OffsetDateTime createdAt,
                            @Nullable OffsetDateTime fulfilledAt, long jobId, String jobState, boolean jobCompleted) {}

    /**
     * Raised inside the order transaction when the caller asked for a failure, after the job was enqueued, so the
     * rollback has something to undo.
     */
    static final class ForcedRollback extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient PlacedOrder undone;

        ForcedRollback(PlacedOrder undone) {
            super("failure requested after the enqueue; the order and its job were rolled back", null, false, false);
            this.undone = undone;
        }
    }

    private static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    private final Riffle riffle;
    private final ConnectionFactory connections;
    private final String insertOrder;
    private final String setJob;
    private final String selectOrder;

    /**
     * Prepares the statements for the two schemas; nothing touches the database until a request arrives.
     *
     * @param riffle the engine whose client enqueues the jobs
     * @param connections the app's own connections (not the engine's pool): the transaction is the app's
     * @param appSchema schema of the {@code orders} table
     * @param riffleSchema the engine's schema, for its {@code terminal_jobs} view
     */
    OrderHandlers(Riffle riffle, ConnectionFactory connections, String appSchema, String riffleSchema) {
        this.riffle = riffle;
        this.connections = connections;
        String orders = "\"" + appSchema + "\".orders";
        this.insertOrder = "INSERT INTO " + orders + " (item, quantity) VALUES ($1, $2) RETURNING id";
        this.setJob = "UPDATE " + orders + " SET job_id = $1 WHERE id = $2";
        this.selectOrder = "SELECT o.id, o.item, o.quantity, o.created_at, o.fulfilled_at, o.job_id,"
                + " (SELECT t.state::text FROM \"" + riffleSchema + "\".terminal_jobs t WHERE t.job_id = o.job_id"
                + "  ORDER BY t.finalized_at DESC LIMIT 1) AS job_state"
                + " FROM " + orders + " o WHERE o.id = $1";
    }

    /** {@code POST /orders}, {@code GET /orders/{id}}, {@code GET /jobs/counts} and {@code POST /callbacks/{id}}. */
    RouterFunction<ServerResponse> routes() {
        return RouterFunctions.route()
                .POST("/orders", this::create)
                .GET("/orders/{id}", this::get)
                .GET("/jobs/counts", this::counts)
                .POST("/callbacks/{id}", this::resolveCallback)
                .build();
    }

    /**
     * The webhook an external system calls to resolve a callback a job registered
     * ({@code Job.registerCallback}): the JSON body goes to the parked handler. 202 when accepted; 409 when the
     * callback was already resolved; 404 when no such callback is pending (unknown, timed out, or its job ended);
     * 400 for a malformed id or a body that is not a JSON object.
     */
    private Mono<ServerResponse> resolveCallback(ServerRequest request) {
        java.util.UUID id;
        try {
            id = java.util.UUID.fromString(request.pathVariable("id"));
        } catch (IllegalArgumentException e) {
            return error(HttpStatus.BAD_REQUEST, Map.of("error", "callback id must be a UUID"));
        }
        return request.bodyToMono(String.class)
                .defaultIfEmpty("")
                .flatMap(body -> riffle.resumeExternal(id, body))
                .then(ServerResponse.accepted().build())
                .onErrorResume(dev.riffle.engine.api.InvalidJobException.class,
                        e -> error(HttpStatus.BAD_REQUEST, Map.of("error", e.getMessage())))
                .onErrorResume(dev.riffle.engine.api.CallbackRejectedException.class, e -> error(
                        e.reason() == dev.riffle.engine.api.CallbackRejectedException.Reason.ALREADY_RESOLVED
                                ? HttpStatus.CONFLICT : HttpStatus.NOT_FOUND,
                        Map.of("error", e.getMessage())));
    }

    private Mono<ServerResponse> create(ServerRequest request) {
        boolean fail = request.queryParam("fail").map(Boolean::parseBoolean).orElse(false);
        return request.bodyToMono(OrderRequest.class)
                .switchIfEmpty(Mono.error(() ->
                        new BadRequest("a JSON body {\"item\": ..., \"quantity\": ...} is required")))
                .map(OrderHandlers::validated)
                .flatMap(order -> placeOrder(order, fail))
                .flatMap(placed -> ServerResponse.created(URI.create("/orders/" + placed.orderId()))
                        .contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(placed))
                .onErrorResume(BadRequest.class, e -> error(HttpStatus.BAD_REQUEST, Map.of("error", e.getMessage())))
                .onErrorResume(ForcedRollback.class, e -> {
                    // The ids were drawn from sequences, so they stay used; nothing else of them survives.
                    Map<String, Object> body = new LinkedHashMap<>();
                    body.put("error", e.getMessage());
                    body.put("rolledBackOrderId", e.undone.orderId());
                    body.put("rolledBackJobId", e.undone.jobId());
                    return error(HttpStatus.INTERNAL_SERVER_ERROR, body);
                });
    }

    /**
     * The transactional enqueue: the order row and its job are written on one connection in one transaction, so
     * either both commit or neither exists. The job's wake-up reaches workers only on commit.
     */
    Mono<PlacedOrder> placeOrder(OrderRequest order, boolean failAfterEnqueue) {
        return Mono.usingWhen(connections.create(),
                connection -> Mono.usingWhen(
                        Mono.from(connection.beginTransaction()).thenReturn(connection),
                        tx -> insert(tx, order)
                                .flatMap(orderId -> riffle.client().enqueue(tx, fulfilmentJob(orderId))
                                        .flatMap(jobId -> linkJob(tx, orderId, jobId)
                                                .thenReturn(new PlacedOrder(orderId, jobId))))
                                .flatMap(placed -> failAfterEnqueue
                                        ? Mono.<PlacedOrder>error(new ForcedRollback(placed))
                                        : Mono.just(placed)),
                        Connection::commitTransaction,
                        (tx, error) -> tx.rollbackTransaction(),
                        Connection::rollbackTransaction),
                Connection::close);
    }

    private Mono<Long> insert(Connection tx, OrderRequest order) {
        return Flux.from(tx.createStatement(insertOrder)
                        .bind("$1", Objects.requireNonNull(order.item()))
                        .bind("$2", order.quantity())
                        .execute())
                .flatMap(result -> result.map(row -> row.get("id", Long.class)))
                .single();
    }

    private Mono<Void> linkJob(Connection tx, long orderId, long jobId) {
        return Flux.from(tx.createStatement(setJob).bind("$1", jobId).bind("$2", orderId).execute())
                .flatMap(result -> result.getRowsUpdated())
                .then();
    }

    private static NewJob fulfilmentJob(long orderId) {
        return NewJob.builder(JOB_KIND).queue(QUEUE).args("{\"orderId\":" + orderId + "}").build();
    }

    private Mono<ServerResponse> get(ServerRequest request) {
        long id;
        try {
            id = Long.parseLong(request.pathVariable("id"));
        } catch (NumberFormatException e) {
            return error(HttpStatus.BAD_REQUEST, Map.of("error", "order id must be a number"));
        }
        return Mono.usingWhen(connections.create(),
                        c -> Flux.from(c.createStatement(selectOrder).bind("$1", id).execute())
                                .flatMap(result -> result.map(OrderHandlers::view))
                                .next(),
                        Connection::close)
                .flatMap(view -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(view))
                .switchIfEmpty(Mono.defer(() -> error(HttpStatus.NOT_FOUND, Map.of("error", "no order " + id))));
    }

    private Mono<ServerResponse> counts(ServerRequest request) {
        return riffle.counts(QUEUE)
                .flatMap(c -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(c));
    }

    private static OrderView view(Readable row) {
        String terminalState = row.get("job_state", String.class);
        OffsetDateTime fulfilledAt = row.get("fulfilled_at", OffsetDateTime.class);
        Long jobId = row.get("job_id", Long.class);
        String state = terminalState != null ? terminalState : fulfilledAt != null ? "fulfilled" : "pending";
        return new OrderView(
                Objects.requireNonNull(row.get("id", Long.class)),
                Objects.requireNonNull(row.get("item", String.class)),
                Objects.requireNonNull(row.get("quantity", Integer.class)),
                Objects.requireNonNull(row.get("created_at", OffsetDateTime.class)),
                fulfilledAt,
                // Committed orders always have a job: the link is written in the same transaction.
                jobId == null ? 0 : jobId,
                state,
                "completed".equals(terminalState));
    }

    private static OrderRequest validated(OrderRequest order) {
        String item = order.item();
        if (item == null || item.isBlank() || item.length() > 200) {
            throw new BadRequest("item must be 1..200 characters");
        }
        if (order.quantity() < 1 || order.quantity() > 1000) {
            throw new BadRequest("quantity must be between 1 and 1000, got " + order.quantity());
        }
        return order;
    }

    private static Mono<ServerResponse> error(HttpStatus status, Map<String, Object> body) {
        return ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON).bodyValue(body);
    }
}
