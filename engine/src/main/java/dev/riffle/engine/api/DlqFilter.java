package dev.riffle.engine.api;

import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Which DLQ entries a bulk retry or purge touches. A filter must name a queue or a kind, or be
 * {@link #all()} explicitly: a bulk operation never touches everything by accident.
 *
 * @param queue only this queue, or null
 * @param kind only this kind, or null
 * @param everything true only for {@link #all()}
 */
public record DlqFilter(@Nullable String queue, @Nullable String kind, boolean everything) {

    /** Validates that the filter is either explicit-all or names something, and that the names are valid. */
    public DlqFilter {
        if (!everything && queue == null && kind == null) {
            throw new InvalidJobException("filter", "name a queue or a kind, or use DlqFilter.all()");
        }
        if (queue != null) {
            NewJob.checkName("queue", queue);
        }
        if (kind != null) {
            NewJob.checkName("kind", kind);
        }
    }

    /** Entries of one queue. */
    public static DlqFilter queue(String queue) {
        return new DlqFilter(queue, null, false);
    }

    /** Entries of one kind. */
    public static DlqFilter kind(String kind) {
        return new DlqFilter(null, kind, false);
    }

    /** Entries of one kind in one queue. */
    public static DlqFilter of(String queue, String kind) {
        return new DlqFilter(queue, kind, false);
    }

    /** Every entry, explicitly. */
    public static DlqFilter all() {
        return new DlqFilter(null, null, true);
    }

    /** The queue, if set. */
    public Optional<String> queueName() {
        return Optional.ofNullable(queue);
    }
}
