package dev.riffle.engine.internal.attempt;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.BackoffFunction;
import dev.riffle.engine.api.JobOutcome;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RetryDelaysTest {
    private final IllegalStateException cause = new IllegalStateException("x");

    private static RetryDelays of(BackoffFunction fn) {
        return new RetryDelays(Map.of("q", fn));
    }

    @Test
    void aRetryWithoutADelayGetsTheQueuesFunctionsDelayAndKeepsItsCause() {
        JobOutcome o = of(a -> Duration.ofSeconds(a * 10L)).apply(JobOutcome.retryOn("e", cause), "q", 3);
        assertThat(o).isEqualTo(new JobOutcome.Retry("e", Duration.ofSeconds(30), cause));
    }

    @Test
    void otherQueuesExplicitDelaysAndOtherOutcomesAreLeftAlone() {
        RetryDelays d = of(a -> Duration.ofSeconds(1));
        JobOutcome other = JobOutcome.retry("e");
        assertThat(d.apply(other, "elsewhere", 1)).isSameAs(other);
        JobOutcome explicit = JobOutcome.retry("e", Duration.ofSeconds(5));
        assertThat(d.apply(explicit, "q", 1)).isSameAs(explicit);
        JobOutcome fail = JobOutcome.fail("e");
        assertThat(d.apply(fail, "q", 1)).isSameAs(fail);
    }

    @Test
    void aFailingOrOutOfRangeFunctionFallsBackToTheDatabaseBackoff() {
        JobOutcome retry = JobOutcome.retry("e");
        assertThat(of(a -> { throw new ArithmeticException(); }).apply(retry, "q", 1)).isSameAs(retry);
        assertThat(of(a -> null).apply(retry, "q", 1)).isSameAs(retry);
        assertThat(of(a -> Duration.ofSeconds(-1)).apply(retry, "q", 1)).isSameAs(retry);
        assertThat(of(a -> JobOutcome.MAX_DELAY.plusSeconds(1)).apply(retry, "q", 1)).isSameAs(retry);
    }
}
