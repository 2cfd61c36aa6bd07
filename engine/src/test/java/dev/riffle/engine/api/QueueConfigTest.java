package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class QueueConfigTest {

    @Test
    void ofMeansNoDeadlineAndEngineDefaultDlq() {
        QueueConfig q = QueueConfig.of("emails");
        assertThat(q.name()).isEqualTo("emails");
        assertThat(q.deadline()).isZero();
        assertThat(q.dlq()).isNull();
    }

    @Test
    void withDlqKeepsTheOtherFields() {
        QueueConfig q = QueueConfig.withDeadline("emails", Duration.ofMinutes(5)).withDlq(false);
        assertThat(q).isEqualTo(new QueueConfig("emails", Duration.ofMinutes(5), false));
        assertThat(q.withDlq(true).dlq()).isTrue();
    }

    @Test
    void queuesAreCompactUnlessMaterializationIsAskedFor() {
        assertThat(QueueConfig.of("q").materialize()).isFalse();
        QueueConfig m = QueueConfig.withDeadline("q", Duration.ofMinutes(5)).withDlq(false).withMaterializedLeases();
        assertThat(m.materialize()).isTrue();
        assertThat(m).isEqualTo(new QueueConfig("q", Duration.ofMinutes(5), false, true));
        // Changing the DLQ policy keeps materialization.
        assertThat(m.withDlq(true).materialize()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"PT0S", "PT1S", "PT30M", "P7D"})
    void acceptedDeadlines(String deadline) {
        Duration d = Duration.parse(deadline);
        assertThat(QueueConfig.withDeadline("q", d).deadline()).isEqualTo(d);
    }

    @Test
    void negativeDeadlineIsRejected() {
        assertThatThrownBy(() -> QueueConfig.withDeadline("q", Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative");
    }

    @ParameterizedTest
    @ValueSource(strings = {"PT0.001S", "PT0.999999999S"})
    void subSecondDeadlineIsRejected(String deadline) {
        assertThatThrownBy(() -> QueueConfig.withDeadline("q", Duration.parse(deadline)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1 s");
    }

    @Test
    void deadlineOverSevenDaysIsRejected() {
        assertThatThrownBy(() -> QueueConfig.withDeadline("q", Duration.ofDays(7).plusNanos(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("7 days");
    }

    @Test
    void nullsAreRejected() {
        assertThatNullPointerException().isThrownBy(() -> new QueueConfig(null, Duration.ZERO, null)).withMessage("name");
        assertThatNullPointerException().isThrownBy(() -> new QueueConfig("q", null, null)).withMessage("deadline");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "has space", ".dot", "a/b"})
    void queueNameFollowsTheJobRule(String name) {
        assertThatThrownBy(() -> QueueConfig.of(name))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("queue"));
    }
}
