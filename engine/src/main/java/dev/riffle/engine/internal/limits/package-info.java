/**
 * Queue limits (docs/limits.md, docs/adr/0015-queue-limits.md): each engine's lease on a share of a queue's global
 * concurrency and rate limits ({@code QueueLimits}), renewed about once a second, and the in-memory token bucket that
 * spends its share of the rate ({@code TokenBucket}).
 */
@NullMarked
package dev.riffle.engine.internal.limits;

import org.jspecify.annotations.NullMarked;
