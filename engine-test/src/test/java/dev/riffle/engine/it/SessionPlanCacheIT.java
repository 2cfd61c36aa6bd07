package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.internal.sql.Connections;
import dev.riffle.engine.internal.sql.SqlCatalog;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Readable;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The sessions the engine owns keep a cached plan of a hot-path statement instead of planning it on every
 * execution ({@link Connections#SESSION_PLAN_CACHE_MODE}, docs/benchmarks.md session 18). On one pooled connection
 * the claim statement runs eight times; PostgreSQL's {@code pg_prepared_statements} of that session must then show
 * generic-plan executions of it. With the sessions' former {@code plan_cache_mode = force_custom_plan} every
 * execution was planned again, {@code generic_plans} stays 0 and both tests fail (seen by setting the constant back).
 */
@RiffleTest
class SessionPlanCacheIT {

    private static final int EXECUTIONS = 8;


    /**
     * Runs the catalog's claim statement {@link #EXECUTIONS} times on the pool's one connection (a queue nobody
     * enqueued to: it claims nothing and writes nothing), then reads that session's protocol-level prepared
     * statements: {generic plans, custom plans} of the claim statement.
     */
    private static long[] claimPlans(TestDatabase db, Supplier<ConnectionPool> poolOf) {
        String claim = SqlCatalog.load(db.schema()).get("claim");
        ConnectionPool pool = poolOf.get();
        try {
            return Mono.usingWhen(pool.create(), c -> Flux.range(0, EXECUTIONS)
                            .concatMap(i -> Flux.from(c.createStatement(claim)
                                            .bind("$1", new String[] {"plan-cache-nobody"})
                                            .bind("$2", new Integer[] {null})
                                            .bind("$3", 1)
                                            .bind("$4", new Boolean[] {false})
                                            .bind("$5", false)
                                            .execute())
                                    .flatMap(r -> r.map((Readable row) -> 1)))
                            .then(Flux.from(c.createStatement("SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                                            + " WHERE statement LIKE '%.claim_ready(%'").execute())
                                    .flatMap(r -> r.map((Readable row) -> new long[] {
                                            row.get("generic_plans", Long.class), row.get("custom_plans", Long.class)}))
                                    .collectList()),
                    Connection::close)
                    .map((List<long[]> rows) -> {
                        assertThat(rows).as("the claim statement, prepared once on this session").hasSize(1);
                        return rows.get(0);
                    })
                    .block(Engines.TIMEOUT);
        } finally {
            pool.disposeLater().block(Engines.TIMEOUT);
        }
    }

    private static void assertPlannedOnceThenCached(long[] plans) {
        assertThat(plans[0] + plans[1]).as("executions").isEqualTo(EXECUTIONS);
        // PostgreSQL's auto mode: custom plans for the first five executions, then the cached generic plan.
        assertThat(plans[0]).as("executions on the cached generic plan").isEqualTo(EXECUTIONS - 5);
    }

    @Test
    void aPoolFromAUrlKeepsTheClaimStatementsPlan(TestDatabase db) {
        String app = "plans-url-" + Integer.toHexString(db.schema().hashCode());
        assertPlannedOnceThenCached(claimPlans(db, () -> Connections.pool(Engines.endpoint(db, app), db.schema(), 1, null)));
    }

    @Test
    void aPoolAroundTheApplicationsFactoryKeepsTheClaimStatementsPlan(TestDatabase db) {
        String app = "plans-app-" + Integer.toHexString(db.schema().hashCode());
        assertPlannedOnceThenCached(claimPlans(db,
                () -> Connections.pool(Engines.connectionFactory(db), db.schema(), 1, app, null)));
    }
}
