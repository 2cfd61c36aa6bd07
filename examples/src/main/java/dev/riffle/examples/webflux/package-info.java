/**
 * A Spring WebFlux app without Spring Boot that enqueues a Riffle job in the same transaction as the order it
 * belongs to: {@link dev.riffle.examples.webflux.OrdersApp}.
 */
@NullMarked
package dev.riffle.examples.webflux;

import org.jspecify.annotations.NullMarked;
