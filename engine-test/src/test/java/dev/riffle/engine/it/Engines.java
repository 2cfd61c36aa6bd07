package dev.riffle.engine.it;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Starts engines on a test schema and enqueues test jobs; every wait here is bounded. */
final class Engines {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private Engines() {}

    static Riffle start(TestDatabase db) {
        return start(db, b -> {});
    }

    static Riffle start(TestDatabase db, Consumer<RiffleConfig.Builder> tweak) {
        RiffleConfig.Builder b = RiffleConfig.builder().url(db.url()).schema(db.schema()).migrate(false).poolSize(6);
        tweak.accept(b);
        return Riffle.start(b.build()).block(TIMEOUT);
    }

    static List<Long> enqueue(Riffle riffle, String queue, int n) {
        List<Long> ids = new ArrayList<>(n);
        for (int from = 0; from < n; from += 1000) {
            List<NewJob> batch = new ArrayList<>();
            for (int i = from; i < Math.min(n, from + 1000); i++) {
                batch.add(NewJob.builder("test.noop").queue(queue).args("{\"i\":" + i + "}").build());
            }
            ids.addAll(riffle.client().enqueueMany(batch).block(TIMEOUT));
        }
        return ids;
    }

    /** A plain (unpooled) R2DBC factory for the test database, for tests that need their own transactions. */
    static io.r2dbc.postgresql.PostgresqlConnectionFactory connectionFactory(TestDatabase db) {
        var url = db.url();
        var b = io.r2dbc.postgresql.PostgresqlConnectionConfiguration.builder()
                .host(url.host()).port(url.port()).database(url.database()).username(url.user())
                .applicationName("riffle.test");
        if (url.password() != null) {
            b.password(url.password());
        }
        return new io.r2dbc.postgresql.PostgresqlConnectionFactory(b.build());
    }

    /** Where the engine's own {@code Connections} would connect for the test database, as {@code applicationName}. */
    static dev.riffle.engine.internal.sql.Connections.Endpoint endpoint(TestDatabase db, String applicationName) {
        var url = db.url();
        return new dev.riffle.engine.internal.sql.Connections.Endpoint(url.host(), url.port(), url.database(),
                url.user(), url.password(), java.util.Map.of(), applicationName);
    }

    static void awaitTrue(String what, java.util.function.BooleanSupplier condition) {
        dev.riffle.engine.test.Await.until(what, TIMEOUT, condition);
    }

    static void close(Riffle... engines) {
        for (Riffle r : engines) {
            if (r != null) {
                r.close().block(TIMEOUT);
            }
        }
    }
}
