/**
 * Runnable Riffle examples: {@link dev.riffle.examples.QuickStart} drains a batch of jobs through one subscription,
 * and {@link dev.riffle.examples.webflux.OrdersApp} shows transactional enqueue behind a Spring WebFlux endpoint.
 */
@NullMarked
package dev.riffle.examples;

import org.jspecify.annotations.NullMarked;
