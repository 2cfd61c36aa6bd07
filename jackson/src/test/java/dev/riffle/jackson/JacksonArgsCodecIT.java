package dev.riffle.jackson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The Jackson codec end to end: a record enqueued as typed args is stored as a JSON object, and the handler decodes
 * the same record; a value that is not a JSON object is refused at enqueue with nothing written.
 */
@RiffleTest
class JacksonArgsCodecIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    record Line(String sku, int quantity) {}

    record Order(long id, String email, List<Line> lines) {}

    private static Riffle start(TestDatabase db) {
        return Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(4)
                .maintenance(MaintenanceConfig.builder().enabled(false).build())
                .argsCodec(new JacksonArgsCodec()).build()).block(TIMEOUT);
    }

    @Test
    void aRecordRoundTripsThroughEnqueueAndAHandler(TestDatabase db) {
        Riffle riffle = start(db);
        try {
            Order order = new Order(42, "a@example.com", List.of(new Line("tea", 2), new Line("cup", 1)));
            long id = riffle.client().enqueue(NewJob.builder("order.confirm").queue("jackson").typedArgs(order).build())
                    .block(TIMEOUT);
            assertThat(db.queryLong("SELECT (args->>'id')::bigint FROM ready_entries WHERE job_id = ?", id))
                    .as("stored as a JSON object, by component name").isEqualTo(42);
            assertThat(db.queryLong("SELECT jsonb_array_length(args->'lines') FROM ready_entries WHERE job_id = ?", id))
                    .isEqualTo(2);

            List<Order> seen = new CopyOnWriteArrayList<>();
            JobHandler handler = job -> {
                seen.add(job.args(Order.class));
                return Mono.empty();
            };
            JobResult result = riffle.work(Map.of("order.confirm", handler), 1, "jackson").next().block(TIMEOUT);
            assertThat(result.accepted()).isTrue();
            assertThat(seen).containsExactly(order);
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }

    @Test
    void aValueThatIsNotAJsonObjectIsRefusedAtEnqueue(TestDatabase db) {
        Riffle riffle = start(db);
        try {
            NewJob notAnObject = NewJob.builder("order.confirm").queue("jackson.bad").typedArgs(List.of(1, 2)).build();
            assertThatThrownBy(() -> riffle.client().enqueue(notAnObject).block(TIMEOUT))
                    .isInstanceOf(InvalidJobException.class).hasMessageContaining("not to an object");
            assertThat(db.queryLong("SELECT count(*) FROM ready_entries WHERE queue = 'jackson.bad'")).isZero();
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }

    @Test
    void withoutACodecTypedArgsAreRefusedAndTheJsonApiIsUnchanged(TestDatabase db) {
        Riffle riffle = Riffle.start(RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(2)
                .maintenance(MaintenanceConfig.builder().enabled(false).build()).build()).block(TIMEOUT);
        try {
            NewJob typed = NewJob.builder("order.confirm").queue("jackson.none").typedArgs(new Line("tea", 1)).build();
            assertThatThrownBy(() -> riffle.client().enqueue(typed).block(TIMEOUT))
                    .isInstanceOf(InvalidJobException.class).hasMessageContaining("argsCodec");
            long id = riffle.client().enqueue(NewJob.builder("order.confirm").queue("jackson.none")
                    .args("{\"sku\":\"tea\",\"quantity\":1}").build()).block(TIMEOUT);
            var job = riffle.subscribe("jackson.none").next().block(TIMEOUT);
            assertThat(job.id()).isEqualTo(id);
            assertThat(job.argsJson()).isEqualTo("{\"sku\": \"tea\", \"quantity\": 1}");
            assertThatThrownBy(() -> job.args(Line.class)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no args codec");
            job.complete().block(TIMEOUT);
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }

    @Test
    void recordsMapByComponentName() {
        JacksonArgsCodec codec = new JacksonArgsCodec();
        String json = codec.encode(new Line("tea", 2));
        assertThat(json).isEqualTo("{\"sku\":\"tea\",\"quantity\":2}");
        assertThat(codec.decode(json, Line.class)).isEqualTo(new Line("tea", 2));
        assertThatThrownBy(() -> codec.decode("{\"id\":\"not a number\"}", Order.class))
                .isInstanceOf(RuntimeException.class);
    }
}
