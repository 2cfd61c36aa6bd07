package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ServiceLoader;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * Proves the test JVM really runs under BlockHound: without this, a missing listener or argLine would silently turn every
 * "no blocking on event loops" guarantee of the suite into a no-op.
 */
class BlockHoundInstalledTest {

    @Test
    void sleepingOnATimerThreadIsCaught() {
        Mono<Long> blocking = Mono.delay(Duration.ofMillis(1)).doOnNext(tick -> sleep(10));

        StepVerifier.create(blocking)
                .expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BlockingOperationError.class)
                        .hasMessageContaining("Thread.sleep"))
                .verify(Duration.ofSeconds(10));
    }

    @Test
    void sleepingOnTheParallelSchedulerIsCaught() {
        Mono<Integer> blocking = Mono.fromCallable(() -> {
            sleep(10);
            return 1;
        }).subscribeOn(Schedulers.parallel());

        StepVerifier.create(blocking)
                .expectError(BlockingOperationError.class)
                .verify(Duration.ofSeconds(10));
    }

    @Test
    void sleepingOnBoundedElasticIsAllowed() {
        // The control: blocking belongs on boundedElastic, so the detector must not flag it there.
        Mono<Integer> blocking = Mono.fromCallable(() -> {
            sleep(10);
            return 1;
        }).subscribeOn(Schedulers.boundedElastic());

        StepVerifier.create(blocking).expectNext(1).verifyComplete();
    }

    @Test
    void riffleIntegrationIsRegistered() {
        assertThat(ServiceLoader.load(BlockHoundIntegration.class).stream()
                .map(p -> p.type().getName()).collect(Collectors.toList()))
                .contains(RiffleBlockHoundIntegration.class.getName());
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
