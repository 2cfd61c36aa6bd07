package dev.riffle.examples.boot;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.spring.boot.RiffleHandler;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Runs {@code order.confirm} jobs: marks the order confirmed by this job. Registered by the starter under its
 * {@link RiffleHandler} kind; runs on the driver's event loop and never blocks.
 */
@Component
@RiffleHandler(OrderController.CONFIRM_KIND)
public class ConfirmOrderHandler implements JobHandler {

    private final DatabaseClient db;
    private final JsonMapper json;
    private final ShopProperties shop;
    private final Set<Long> handledJobs = ConcurrentHashMap.newKeySet();

    /** The app's database client and JSON mapper. */
    public ConfirmOrderHandler(DatabaseClient db, JsonMapper json, ShopProperties shop) {
        this.db = db;
        this.json = json;
        this.shop = shop;
    }

    @Override
    public Mono<JobOutcome> handle(Job job) {
        JsonNode args = json.readTree(job.argsJson());
        long orderId = args.get("orderId").asLong();
        return db.sql("UPDATE " + shop.ordersTable() + " SET confirmed_at = now(), confirmed_by_job = :job WHERE id = :id")
                .bind("job", job.id()).bind("id", orderId)
                .fetch().rowsUpdated()
                .doOnNext(updated -> handledJobs.add(job.id()))
                .then(Mono.empty());
    }

    /** The jobs this handler has run in this process (the example's test awaits its job here). */
    public Set<Long> handledJobs() {
        return Set.copyOf(handledJobs);
    }
}
