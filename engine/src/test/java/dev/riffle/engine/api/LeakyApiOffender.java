package dev.riffle.engine.api;

import dev.riffle.engine.internal.sql.SqlCatalog;

/** Test-only class in the API package that breaks the API rules on purpose (see ArchitectureTest). */
public final class LeakyApiOffender {
    private LeakyApiOffender() {}

    static String leak(SqlCatalog catalog, io.r2dbc.pool.ConnectionPool pool) {
        return catalog.get("ping") + pool;
    }
}
