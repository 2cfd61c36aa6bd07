package dev.riffle.engine.api;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Weighted sharing of one subscription across several queues (docs/limits.md#weighted-sharing): while several of
 * the queues have work, the subscription's claims go to them in proportion to their weights (smooth weighted round
 * robin over claims); a queue without work is skipped until a NOTIFY or poll says it may have some again. Weights
 * share claims, not jobs: with claims of equal size (a subscriber asking for one job at a time, or a full batch
 * each) jobs follow the same proportions.
 *
 * @param weights queue name to weight, 1 to {@value #MAX_WEIGHT}, in the subscription's order; at least one queue
 */
public record QueueWeights(Map<String, Integer> weights) {

    /** Largest weight accepted: {@value}. */
    public static final int MAX_WEIGHT = 1000;

    /** Validates and copies (keeping the order). */
    public QueueWeights {
        Objects.requireNonNull(weights, "weights");
        if (weights.isEmpty()) {
            throw new IllegalArgumentException("weights need at least one queue");
        }
        Map<String, Integer> copy = new LinkedHashMap<>();
        weights.forEach((queue, weight) -> {
            NewJob.checkName("queue", queue);
            if (weight == null || weight < 1 || weight > MAX_WEIGHT) {
                throw new IllegalArgumentException("weight of queue '" + queue + "' must be between 1 and " + MAX_WEIGHT
                        + ", got " + weight);
            }
            copy.put(queue, weight);
        });
        weights = Collections.unmodifiableMap(copy);
    }

    /** Weights from alternating queue names and weights: {@code of("a", 3, "b", 1)}. */
    public static QueueWeights of(Object... queueWeightPairs) {
        if (queueWeightPairs.length == 0 || queueWeightPairs.length % 2 != 0) {
            throw new IllegalArgumentException("expected queue, weight pairs");
        }
        Map<String, Integer> m = new LinkedHashMap<>();
        for (int i = 0; i < queueWeightPairs.length; i += 2) {
            if (!(queueWeightPairs[i] instanceof String q) || !(queueWeightPairs[i + 1] instanceof Integer w)) {
                throw new IllegalArgumentException("expected queue (String), weight (Integer) pairs");
            }
            if (m.put(q, w) != null) {
                throw new IllegalArgumentException("queue '" + q + "' given twice");
            }
        }
        return new QueueWeights(m);
    }
}
