package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffPolicyTest {

    @Test
    void aQueueKeepsItsOtherSettingsWhenItsBackoffIsSet() {
        BackoffFunction fn = attempt -> Duration.ofSeconds(attempt);
        QueueConfig q = QueueConfig.of("q").withDlq(true).withEnqueueShards(2)
                .withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(2), 0.5).withBackoffFunction(fn);
        assertThat(q.backoff()).isEqualTo(new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(2), 0.5));
        assertThat(q.backoffFunction()).isSameAs(fn);
        assertThat(q.dlq()).isTrue();
        assertThat(q.enqueueShards()).isEqualTo(2);
        assertThat(q.withMaterializedLeases().backoff()).isEqualTo(q.backoff());
        assertThat(QueueConfig.of("q").backoff()).as("default: what the schema recorded").isNull();
    }

    @Test
    void invalidValuesAreRejected() {
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ZERO, Duration.ofSeconds(1), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("base");
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ofSeconds(-1), Duration.ofSeconds(1), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("base");
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ofSeconds(2), Duration.ofSeconds(1), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cap");
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ofSeconds(1), Duration.ofDays(366), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cap");
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(1), 1.5))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter");
        assertThatThrownBy(() -> new BackoffPolicy(Duration.ofSeconds(1), Duration.ofSeconds(1), Double.NaN))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter");
        assertThatThrownBy(() -> QueueConfig.of("q").withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1), -0.1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("jitter");
        assertThatThrownBy(() -> QueueConfig.of("q").withBackoffFunction(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void theBuiltInPolicyIsTheDocumentedDefault() {
        assertThat(BackoffPolicy.builtIn())
                .isEqualTo(new BackoffPolicy(Duration.ofSeconds(2), Duration.ofHours(24), 0.25));
    }
}
