package dev.riffle.engine.internal.attempt;

/**
 * Where an attempt's receipt lives in the receipt plane (docs/design/storage-planes.md): claim slot, compact batch id
 * and 1-based index (or batch id 0 for a row-local {@code lease_claims} receipt), receipt id, and the attempt's
 * {@code (jobId, runLease)}. Everything closing or heartbeating the attempt needs, without re-reading the ready row.
 */
public record Receipt(int claimSlot, long batchId, int batchIndex, long receiptId, long jobId, long runLease) {
    /** Whether the receipt is a row-local {@code lease_claims} row rather than a compact batch item. */
    public boolean rowLocal() {
        return batchId == 0;
    }
}
