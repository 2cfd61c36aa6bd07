package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class JobOutcomeTest {

    @Test
    void factoriesBuildTheMatchingRecords() {
        assertThat(JobOutcome.complete()).isEqualTo(new JobOutcome.Complete());
        assertThat(JobOutcome.retry("boom")).isEqualTo(new JobOutcome.Retry("boom", null));
        assertThat(JobOutcome.retry("boom", Duration.ofSeconds(3)))
                .isEqualTo(new JobOutcome.Retry("boom", Duration.ofSeconds(3)));
        assertThat(JobOutcome.snooze(Duration.ofMinutes(1))).isEqualTo(new JobOutcome.Snooze(Duration.ofMinutes(1)));
        assertThat(JobOutcome.fail("bad input")).isEqualTo(new JobOutcome.Fail("bad input"));
        assertThat(JobOutcome.cancel("superseded")).isEqualTo(new JobOutcome.Cancel("superseded"));
    }

    @Test
    void retryWithoutDelayMeansQueueBackoff() {
        JobOutcome.Retry r = (JobOutcome.Retry) JobOutcome.retry("boom");
        assertThat(r.delay()).isNull();
        assertThat(r.error()).isEqualTo("boom");
    }

    @Test
    void maxDelayIs365Days() {
        assertThat(JobOutcome.MAX_DELAY).isEqualTo(Duration.ofDays(365));
    }

    @Test
    void delayBoundsAreInclusive() {
        assertThat(((JobOutcome.Retry) JobOutcome.retry("e", Duration.ZERO)).delay()).isZero();
        assertThat(((JobOutcome.Retry) JobOutcome.retry("e", Duration.ofDays(365))).delay()).isEqualTo(Duration.ofDays(365));
        assertThat(((JobOutcome.Snooze) JobOutcome.snooze(Duration.ZERO)).delay()).isZero();
        assertThat(((JobOutcome.Snooze) JobOutcome.snooze(Duration.ofDays(365))).delay()).isEqualTo(Duration.ofDays(365));
    }

    @Test
    void negativeDelayIsRejected() {
        assertThatThrownBy(() -> JobOutcome.retry("e", Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retry delay");
        assertThatThrownBy(() -> JobOutcome.snooze(Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("snooze delay");
    }

    @Test
    void delayOver365DaysIsRejected() {
        Duration tooLong = Duration.ofDays(365).plusNanos(1);
        assertThatThrownBy(() -> JobOutcome.retry("e", tooLong)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> JobOutcome.snooze(tooLong)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> JobOutcome.snooze(Duration.ofSeconds(Long.MAX_VALUE)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void snoozeNeedsADelay() {
        assertThatThrownBy(() -> JobOutcome.snooze(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void nullReasonsAreRejected() {
        assertThatNullPointerException().isThrownBy(() -> JobOutcome.retry(null)).withMessage("error");
        assertThatNullPointerException().isThrownBy(() -> JobOutcome.retry(null, Duration.ZERO)).withMessage("error");
        assertThatNullPointerException().isThrownBy(() -> JobOutcome.fail(null)).withMessage("reason");
        assertThatNullPointerException().isThrownBy(() -> JobOutcome.cancel(null)).withMessage("reason");
    }

    @Test
    void emptyReasonsAreAllowed() {
        assertThat(((JobOutcome.Fail) JobOutcome.fail("")).reason()).isEmpty();
    }

    @Test
    void everyOutcomeKindIsCovered() {
        // The sealed hierarchy is what the completion path switches over; a new kind must show up here first.
        assertThat(JobOutcome.class.getPermittedSubclasses()).containsExactlyInAnyOrder(JobOutcome.Complete.class,
                JobOutcome.Retry.class, JobOutcome.Snooze.class, JobOutcome.Fail.class, JobOutcome.Cancel.class);
    }
}
