package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.internal.sql.Connections;
import dev.riffle.engine.internal.sql.SqlCatalog;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Pool warm-up ({@code RiffleConfig.warmPool}, R__88_session_warmup.sql): a pool the engine creates sets up each
 * session once, when it opens, not on every acquire (with r2dbc-pool's {@code postAllocate}, which runs per acquire,
 * the first test counts 30 setups for its one session and fails); {@code warm_session()} reads no job and writes nothing;
 * start opens the whole pool only when the warm-up is on.
 */
@RiffleTest
class SessionWarmupIT {


    /** {@code n} acquires one after another, each running one statement and releasing the connection. */
    private static void acquire(ConnectionPool pool, int n) {
        Flux.range(0, n)
                .concatMap(i -> Mono.usingWhen(pool.create(),
                        c -> Flux.from(c.createStatement("SELECT 1").execute()).flatMap(r -> r.map((row, m) -> 1)).then(),
                        Connection::close))
                .then()
                .block(Engines.TIMEOUT);
    }

    private static long sessions(TestDatabase db, String applicationName) {
        return db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", applicationName);
    }

    /**
     * A pool of one connection from {@code poolFor(counting statement)}, whose session setup bumps a sequence; 30
     * acquires, all of the same session: the setup ran once. Per acquire, it would have run 30 times.
     */
    private static void assertOneSetupForThirtyAcquires(TestDatabase db, String app,
                                                        Function<String, ConnectionPool> poolFor) {
        String sequence = "setups_" + app.replace('-', '_');
        db.execute("CREATE SEQUENCE " + sequence);
        ConnectionPool pool = poolFor.apply("SELECT nextval('\"" + db.schema() + "\"." + sequence + "')");
        try {
            acquire(pool, 30);
            // The engine's application_name (set by the engine, whatever the factory's), on the pool's one session.
            assertThat(sessions(db, app + ".pool")).isEqualTo(1);
            assertThat(db.queryLong("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM " + sequence))
                    .as("one setup per session, not per acquire").isEqualTo(1);
        } finally {
            pool.disposeLater().block(Engines.TIMEOUT);
        }
    }

    @Test
    void theEnginesPoolSetsUpASessionOnceNotOnEveryAcquire(TestDatabase db) {
        String app = "warm-url-" + Integer.toHexString(db.schema().hashCode());
        assertOneSetupForThirtyAcquires(db, app, sql -> Connections.pool(Engines.endpoint(db, app), db.schema(), 1, sql));
    }

    @Test
    void aPoolAroundTheApplicationsFactorySetsUpASessionOnce(TestDatabase db) {
        String app = "warm-app-" + Integer.toHexString(db.schema().hashCode());
        assertOneSetupForThirtyAcquires(db, app,
                sql -> Connections.pool(Engines.connectionFactory(db), db.schema(), 1, app, sql));
    }

    @Test
    void warmSessionReadsNoJobAndWritesNothing(TestDatabase db) throws Exception {
        int n = 20;
        Riffle producer = Engines.start(db, c -> c.warmPool(false)
                .maintenance(MaintenanceConfig.builder().enabled(false).build()));
        List<Long> ids;
        try {
            ids = Engines.enqueue(producer, "default", n);
        } finally {
            Engines.close(producer);
        }
        String warm = SqlCatalog.load(db.schema()).get("warm_session");
        try (java.sql.Connection c = db.openJdbc(); Statement st = c.createStatement()) {
            c.setAutoCommit(false);
            try (ResultSet rs = st.executeQuery(warm)) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(1)).as("hot-path calls made").isEqualTo(7);
            }
            try (ResultSet rs = st.executeQuery("SELECT txid_current_if_assigned()")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getObject(1)).as("no transaction id taken").isNull();
            }
            // This transaction's own row changes in the schema's tables: a claim would insert receipt rows.
            try (ResultSet rs = st.executeQuery("SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) "
                    + "FROM pg_stat_xact_user_tables WHERE schemaname = current_schema()")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getLong(1)).as("rows written by warm_session").isZero();
            }
            c.commit();
        }
        // Every job is still there for a worker, once each.
        Riffle worker = Engines.start(db, c -> c.maintenance(MaintenanceConfig.builder().enabled(false).build()));
        try {
            List<Long> delivered = worker.subscribe("default")
                    .flatMap((Job job) -> job.complete().thenReturn(job.id()), 8, 1)
                    .take(n)
                    .collectList()
                    .block(Duration.ofSeconds(60));
            Set<Long> distinct = new HashSet<>(delivered);
            assertThat(delivered).hasSize(n);
            assertThat(distinct).isEqualTo(new HashSet<>(ids));
        } finally {
            Engines.close(worker);
        }
    }

    @Test
    void startOpensTheWholePoolOnlyWhenWarming(TestDatabase db) {
        String warmApp = "warm-on-" + Integer.toHexString(db.schema().hashCode());
        String coldApp = "warm-off-" + Integer.toHexString(db.schema().hashCode());
        Riffle warm = Engines.start(db, c -> c.applicationName(warmApp).poolSize(5)
                .maintenance(MaintenanceConfig.builder().enabled(false).build()));
        Riffle cold = Engines.start(db, c -> c.applicationName(coldApp).poolSize(5).warmPool(false)
                .maintenance(MaintenanceConfig.builder().enabled(false).build()));
        try {
            assertThat(sessions(db, warmApp + ".pool")).as("warmed pool, open in full at start").isEqualTo(5);
            assertThat(sessions(db, coldApp + ".pool")).as("cold pool, its initial size").isLessThanOrEqualTo(2);
        } finally {
            Engines.close(warm, cold);
        }
    }
}
