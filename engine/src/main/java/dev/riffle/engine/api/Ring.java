package dev.riffle.engine.api;

/** The three rings of partitions (docs/design/rings-and-proofs.md). */
public enum Ring {
    /** Ready entries and terminal history, partitioned by ready slot. */
    QUEUE("queue"),
    /** Receipt plane: claims and closure evidence, partitioned by claim slot. */
    CLAIM("claim"),
    /** Materialized leases, partitioned by lease slot. */
    LEASE("lease");

    private final String sqlName;

    Ring(String sqlName) {
        this.sqlName = sqlName;
    }

    /** The name the database functions use. */
    public String sqlName() {
        return sqlName;
    }
}
