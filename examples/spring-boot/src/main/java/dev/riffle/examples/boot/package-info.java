/**
 * A Spring Boot 4 WebFlux shop on riffle-spring-boot-starter: no Riffle wiring code, only {@code application.yaml}.
 * {@code POST /orders} writes the order and enqueues its confirmation job in one R2DBC transaction;
 * {@link dev.riffle.examples.boot.ConfirmOrderHandler} runs the job; readiness includes Riffle's health.
 */
@NullMarked
package dev.riffle.examples.boot;

import org.jspecify.annotations.NullMarked;
