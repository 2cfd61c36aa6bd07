package dev.riffle.engine.internal.lease;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.api.InvalidJobException;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/** Edge validation happens before any database work (the Db here is absent, so reaching it would fail). */
class CallbacksTest {

    private final Callbacks callbacks = new Callbacks(null, Flux.never(), Duration.ofSeconds(5), Schedulers.parallel(), 64);

    @ParameterizedTest
    @ValueSource(strings = {"PT0S", "PT0.999S", "P7DT1S", "-PT5S"})
    void timeoutsOutsideOneSecondToSevenDaysAreRejected(String timeout) {
        StepVerifier.create(callbacks.register(null, Duration.parse(timeout)))
                .expectErrorSatisfies(e -> org.assertj.core.api.Assertions.assertThat(e)
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("between 1 s and 7 days"))
                .verify(Duration.ofSeconds(5));
    }

    @ParameterizedTest
    @ValueSource(strings = {"[1]", "not json", "{\"big\":\"" + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + "\"}"})
    void resumeRejectsBadPayloadsBeforeTouchingTheDatabase(String payload) {
        StepVerifier.create(callbacks.resume(UUID.randomUUID(), payload))
                .expectError(InvalidJobException.class)
                .verify(Duration.ofSeconds(5));
    }

    @org.junit.jupiter.api.Test
    void resumeNeedsACallbackId() {
        assertThatThrownBy(() -> callbacks.resume(null, "{}").block(Duration.ofSeconds(5)))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("callbackId");
    }
}
