package dev.riffle.admin.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.riffle.engine.api.QueueCounts;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The rates and chart points the sampler's history derives from samples at known times; no database. */
class QueueSamplerTest {

    private static final long SECOND = 1_000_000_000L;

    private static QueueSampler.Sample sample(int second, long completedA, long completedB, double ageB) {
        return new QueueSampler.Sample(Instant.ofEpochSecond(1_000 + second), second * SECOND, List.of(
                new QueueSampler.QueueSample(new QueueCounts("a", 1, 0, completedA, 0), 0, 0),
                new QueueSampler.QueueSample(new QueueCounts("b", 2, 1, completedB, 0), 3, ageB)));
    }

    @Test
    void aQueuesRateIsMeasuredOverTheLastFewSamples() {
        List<QueueSampler.Sample> samples = new ArrayList<>();
        // queue a completes 10 per second throughout; queue b 50 in the last second only
        for (int s = 0; s <= 8; s++) {
            samples.add(sample(s, 10L * s, s == 8 ? 50 : 0, 0));
        }
        QueueSampler.History h = new QueueSampler.History(List.copyOf(samples));
        assertThat(h.completedPerSecond("a")).isCloseTo(10.0, within(1e-9));
        // over the window of RATE_WINDOW seconds, not the last one
        assertThat(h.completedPerSecond("b")).isCloseTo(50.0 / QueueSampler.RATE_WINDOW, within(1e-9));
        assertThat(h.completedPerSecond("nowhere")).isZero();
        assertThat(new QueueSampler.History(List.of(sample(0, 5, 5, 0))).completedPerSecond("a"))
                .as("one sample has no rate").isZero();
    }

    @Test
    void aCountThatWentDownReadsAsNoThroughput() {
        QueueSampler.History h = new QueueSampler.History(List.of(sample(0, 100, 0, 0), sample(1, 40, 0, 0)));
        assertThat(h.completedPerSecond("a")).isZero();
        assertThat(h.points().get(0).completedPerSecond()).isZero();
    }

    @Test
    void chartPointsSumTheQueuesAndTakeTheWorstWait() {
        QueueSampler.History h = new QueueSampler.History(List.of(sample(0, 0, 0, 1.5), sample(2, 10, 30, 4.0)));
        List<QueueSampler.Point> points = h.points();
        assertThat(points).hasSize(1);
        QueueSampler.Point p = points.get(0);
        assertThat(p.at()).isEqualTo(Instant.ofEpochSecond(1_002));
        assertThat(p.completedPerSecond()).as("(10 + 30) over 2 s").isCloseTo(20.0, within(1e-9));
        assertThat(p.oldestAvailableAgeSeconds()).isEqualTo(4.0);
        assertThat(p.available()).isEqualTo(3);
        assertThat(p.running()).isEqualTo(1);
    }
}
