package dev.riffle.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The steady p99 targets compare two latencies at one rate, which only means something while the baseline keeps up:
 * a baseline that falls behind reports the age of its backlog as its p99, and any Riffle latency would pass against
 * it (session 18's full run: 0.00x against a baseline at 58 % of its producer rate). Without the keep-up rule in
 * {@code Summary.pickupP99Targets} the first test sees "pass" and fails.
 */
class SummaryTargetsTest {

    /** A summary with one steady-b50 entry: both systems' producer rate 10,000 jobs/s and their completed rates. */
    private static Map<String, Object> steadyB50(double baselineCompleted, double riffleCompleted) {
        Map<String, Object> baseline = Map.of("rate_target", 10_000, "completed_jobs_per_s", baselineCompleted,
                "pickup_p99_ms", 36_000.0, "second_half_pickup_p99_ms", 36_000.0);
        Map<String, Object> riffle = Map.of("rate_target", 10_000, "completed_jobs_per_s", riffleCompleted,
                "pickup_p99_ms", 20.0, "second_half_pickup_p99_ms", 18.0);
        Map<String, Object> ratio = Map.of("pickup_p99_ms", 20.0 / 36_000, "second_half_pickup_p99_ms", 18.0 / 36_000);
        return Map.of("profile steady-b50", Map.of("scenario", "steady", "baseline", baseline, "riffle", riffle,
                "ratio_riffle_to_baseline", ratio, "rounds", 1));
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> p99Targets(Map<String, Object> summary) {
        return Summary.targets(summary, List.of(64), 50_000).stream()
                .map(t -> (Map<String, Object>) t)
                .filter(t -> ((String) t.get("target")).startsWith("pickup p99 at 50 % of the baseline's peak"))
                .toList();
    }

    @Test
    void aBaselineThatFellBehindMakesTheP99TargetsNotApplicable() {
        List<Map<String, Object>> targets = p99Targets(steadyB50(5_849, 10_000));
        assertThat(targets).hasSize(2).allSatisfy(t -> {
            assertThat(t.get("status")).isEqualTo("n/a");
            assertThat((String) t.get("goal")).contains("the baseline completed 0.58 of its producer rate");
        });
    }

    @Test
    void aBaselineThatKeptUpIsComparedAsBefore() {
        List<Map<String, Object>> targets = p99Targets(steadyB50(9_990, 10_000));
        assertThat(targets).hasSize(2).allSatisfy(t -> {
            assertThat(t.get("status")).isEqualTo("pass");
            assertThat(t.get("goal")).isEqualTo("<= 1.0");
        });
    }
}
