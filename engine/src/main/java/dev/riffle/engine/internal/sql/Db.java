package dev.riffle.engine.internal.sql;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Readable;
import io.r2dbc.spi.Statement;
import java.util.function.Consumer;
import java.util.function.Function;
import reactor.core.publisher.Flux;

/**
 * Runs catalog statements on pooled connections. Every hot-path call is a single autocommit statement whose work
 * happens in a server-side function, so there is no client-side transaction to manage here.
 */
public final class Db {

    private final ConnectionFactory pool;
    private final SqlCatalog sql;

    /** Wraps a pooled factory (the engine's own pool, or the application's) and a catalog. */
    public Db(ConnectionFactory pool, SqlCatalog sql) {
        this.pool = pool;
        this.sql = sql;
    }

    /** The catalog. */
    public SqlCatalog sql() {
        return sql;
    }

    /** The pooled factory. */
    public ConnectionFactory pool() {
        return pool;
    }

    /** Runs statement {@code name} on a pooled connection, mapping every row. Cold. */
    public <T> Flux<T> query(String name, Consumer<Statement> binder, Function<Readable, T> mapper) {
        return Flux.usingWhen(pool.create(), c -> query(c, name, binder, mapper), Connection::close);
    }

    /** Runs statement {@code name} on the given connection, mapping every row. Cold. */
    public <T> Flux<T> query(Connection c, String name, Consumer<Statement> binder, Function<Readable, T> mapper) {
        return Flux.defer(() -> {
            Statement st = c.createStatement(sql.get(name));
            binder.accept(st);
            return Flux.from(st.execute()).concatMap(r -> r.map(mapper), 1);
        });
    }

    /**
     * The SQLSTATE of a database error, or null. Errors are classified by state, not class
     * (docs/design/delivery-contract.md, Outages).
     */
    public static String sqlState(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof R2dbcException e && e.getSqlState() != null) {
                return e.getSqlState();
            }
        }
        return null;
    }

    /**
     * True for SQLSTATE class 22, data exception: the database refused a value it was sent (text that is not
     * valid {@code jsonb}: 22P02 bad syntax, 22P05 a <code>&#92;u0000</code> escape, 22003 a number beyond
     * {@code numeric}). The input is at fault, running the statement again cannot help, and the caller maps it to
     * {@code InvalidJobException} naming the field the value came from (docs/adr/0008-json-judged-once.md).
     */
    public static boolean isDataException(Throwable t) {
        String state = sqlState(t);
        return state != null && state.startsWith("22");
    }

    /**
     * True for a deadlock (40P01) or serialization failure (40001): the server rolled the whole statement back, so
     * running it again is safe even when it writes. Connection loss is not included: the statement may have
     * committed before the connection went, and a second run could then answer differently (a cancel that
     * succeeded would report "not found").
     */
    public static boolean isConflict(Throwable t) {
        String state = sqlState(t);
        return "40P01".equals(state) || "40001".equals(state);
    }

    /** The name of the constraint a database error reports (a CHECK, unique or foreign key), or null. */
    public static String constraintName(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof io.r2dbc.postgresql.api.PostgresqlException e) {
                return e.getErrorDetails().getConstraintName().orElse(null);
            }
        }
        return null;
    }

    /**
     * True for errors worth retrying: connection loss (including a pooled connection that failed validation on
     * acquire, when nothing was sent yet), serialization failure, deadlock, lock timeout, server shutting down or
     * starting up, too many connections, read-only while a replica is promoted.
     */
    public static boolean isTransient(Throwable t) {
        String state = sqlState(t);
        if (state == null) {
            for (Throwable x = t; x != null; x = x.getCause()) {
                String message = String.valueOf(x.getMessage());
                if (x instanceof io.r2dbc.spi.R2dbcTransientException
                        || x instanceof java.io.IOException
                        || x instanceof io.r2dbc.spi.R2dbcTimeoutException
                        || message.contains("Connection validation failed")
                        || message.contains("Cannot connect")
                        || x.getClass().getName().endsWith("PostgresConnectionClosedException")
                        || x.getClass().getName().endsWith("PoolAcquireTimeoutException")) {
                    return true;
                }
            }
            return false;
        }
        // 25006: read-only transaction (a replica being promoted, or a failover target not yet writable);
        // 53300: too many connections (a restarting server briefly full); 57P01/57P02/57P03: admin shutdown,
        // crash shutdown, cannot connect now (starting up).
        return state.startsWith("08") || isConflict(t) || state.equals("55P03")
                || state.equals("25006") || state.equals("53300")
                || state.equals("57P01") || state.equals("57P02") || state.equals("57P03");
    }
}
