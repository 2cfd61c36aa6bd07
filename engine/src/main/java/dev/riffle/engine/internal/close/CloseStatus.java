package dev.riffle.engine.internal.close;

/**
 * What {@code complete_compact} and {@code close_attempts} answer for each item: one vocabulary for both, read in
 * one place ({@link #of}).
 */
enum CloseStatus {
    /** This statement closed the attempt. */
    APPLIED,
    /**
     * The attempt already carries exactly the closure this item writes: after a retried flush, that is the flush's
     * own first try, which committed although its answer was lost; on a first try, a duplicate.
     */
    APPLIED_BEFORE,
    /** Someone else (operator cancel, rescue, another outcome) closed the attempt first. */
    ALREADY_CLOSED,
    /** No such open attempt: wrong run lease, receipt, batch or index. */
    STALE;

    /** Parses the database's word; anything unknown is treated as stale, the answer that writes nothing. */
    static CloseStatus of(String status) {
        return switch (status) {
            case "applied" -> APPLIED;
            case "applied_before" -> APPLIED_BEFORE;
            case "already_closed" -> ALREADY_CLOSED;
            default -> STALE;
        };
    }
}
