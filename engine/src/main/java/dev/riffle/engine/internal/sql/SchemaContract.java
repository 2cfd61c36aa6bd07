package dev.riffle.engine.internal.sql;

import dev.riffle.engine.api.SchemaNotReadyException;
import reactor.core.publisher.Mono;

/**
 * The function contract between this engine and its schema (docs/adr/0007). The SQL functions are what engines of
 * different versions share during a rolling deploy, so the schema states which contract its functions implement
 * ({@code contract_version()}, defined last, in {@code R__90_contract.sql}) and the engine refuses to start on any
 * other one. Bump {@link #VERSION} together with that function, whenever a function change is one an engine built
 * for the previous contract cannot run against.
 */
public final class SchemaContract {

    /** The contract version this engine runs against. */
    public static final int VERSION = 4;

    private SchemaContract() {}

    /**
     * Errors with {@link SchemaNotReadyException} when the schema has no {@code contract_version()} (not migrated,
     * or migrated by a build that predates contract versions) or when it returns another version. Cold.
     */
    public static Mono<Void> check(Db db, String schema) {
        return db.query("schema_contract", st -> {}, row -> Boolean.TRUE.equals(row.get("present", Boolean.class)))
                .next()
                .flatMap(present -> present
                        ? db.query("contract_version", st -> {}, row -> row.get("version", Integer.class)).next()
                        : Mono.<Integer>error(notMigrated(schema)))
                .flatMap(version -> version == VERSION ? Mono.<Void>empty() : Mono.error(mismatch(schema, version)));
    }

    private static SchemaNotReadyException notMigrated(String schema) {
        return new SchemaNotReadyException("schema '" + schema + "' is not migrated (it has no contract_version() "
                + "function); start with migrate(true) or run RiffleMigrations first");
    }

    private static SchemaNotReadyException mismatch(String schema, int version) {
        String fix = version < VERSION
                ? "migrate it with this engine's RiffleMigrations (or start with migrate(true))"
                : "it was migrated by a newer Riffle; run an engine built for contract " + version;
        return new SchemaNotReadyException("schema '" + schema + "' implements function contract version " + version
                + ", but this engine needs contract version " + VERSION + "; " + fix + ". Nothing was changed.");
    }
}
