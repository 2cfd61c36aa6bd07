package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;

class CronScheduleTest {

    private static final Instant T = Instant.parse("2030-01-15T10:00:00Z");

    @Test
    void fiveFieldsFireAtSecondZeroAndSixFieldsReadSecondsFirst() {
        CronSchedule minutes = CronSchedule.builder("m", "*/5 * * * *").build();
        assertThat(minutes.nextFireAfter(T)).contains(Instant.parse("2030-01-15T10:05:00Z"));
        CronSchedule seconds = CronSchedule.builder("s", "*/10 * * * * *").build();
        assertThat(seconds.nextFireAfter(T)).contains(Instant.parse("2030-01-15T10:00:10Z"));
        assertThat(CronSchedule.builder("d", "@daily").build().nextFireAfter(T))
                .contains(Instant.parse("2030-01-16T00:00:00Z"));
    }

    @Test
    void theExpressionIsReadInTheScheduleTimeZone() {
        // 09:00 in Paris is 08:00 UTC in January and 07:00 UTC in July.
        CronSchedule paris = CronSchedule.builder("p", "0 9 * * *").zone("Europe/Paris").build();
        assertThat(paris.zone()).isEqualTo(ZoneId.of("Europe/Paris"));
        assertThat(paris.nextFireAfter(T)).contains(Instant.parse("2030-01-16T08:00:00Z"));
        assertThat(paris.nextFireAfter(Instant.parse("2030-07-01T00:00:00Z")))
                .contains(Instant.parse("2030-07-01T07:00:00Z"));
    }

    @Test
    void firesBetweenKeepsTheLatestUpToTheBoundOldestFirstAndIncludesTheEnd() {
        CronSchedule s = CronSchedule.builder("s", "*/10 * * * * *").build();
        Instant after = T;
        Instant until = T.plusSeconds(65);
        assertThat(s.firesBetween(after, until, 1)).containsExactly(T.plusSeconds(60));
        assertThat(s.firesBetween(after, until, 3)).containsExactly(T.plusSeconds(40), T.plusSeconds(50),
                T.plusSeconds(60));
        assertThat(s.firesBetween(after, until, 100)).hasSize(6).first().isEqualTo(T.plusSeconds(10));
        // The end is inclusive (to the second), the start exclusive.
        assertThat(s.firesBetween(T, T.plusSeconds(10).plusMillis(999), 5)).containsExactly(T.plusSeconds(10));
        assertThat(s.firesBetween(T, T.plusSeconds(9), 5)).isEmpty();
        assertThat(s.firesBetween(T.plusSeconds(10), T.plusSeconds(10), 5)).isEqualTo(List.of());
    }

    @Test
    void invalidInputIsRefusedWithTheFieldNamed() {
        assertThatThrownBy(() -> CronSchedule.builder("x", "not a cron").build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("cron");
        assertThatThrownBy(() -> CronSchedule.builder("x", "* * *").build())
                .isInstanceOf(InvalidJobException.class).hasMessageContaining("has 3 fields");
        assertThatThrownBy(() -> CronSchedule.builder("x", "0 0 25 * * *").build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("cron");
        assertThatThrownBy(() -> CronSchedule.builder("x", "* * * * *").zone("Mars/Olympus").build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("zone");
        assertThatThrownBy(() -> CronSchedule.builder("bad name", "* * * * *").build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("name");
        assertThatThrownBy(() -> CronSchedule.builder("x", "* * * * *").args("[1]").build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("args");
        assertThatThrownBy(() -> CronSchedule.builder("x", "* * * * *").priority(5).build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("priority");
        assertThatThrownBy(() -> CronSchedule.builder("x", "* * * * *").catchUp(0).build())
                .isInstanceOf(InvalidJobException.class).extracting("field").isEqualTo("catchUp");
        assertThat(CronSchedule.builder("x", "* * * * *").build().kind()).isEqualTo("x");
    }
}
