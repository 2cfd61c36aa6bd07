package dev.riffle.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class QuickStartTest {

    private static final int JOBS = 500;
    // Not the demo's own schema, so a test run never clobbers someone's quick start on the same database.
    private static final String SCHEMA = "riffle_quickstart_test";

    @Test
    void completesEveryJobExactlyOnceInFewerBatchesThanJobs() throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        QuickStart.Options options = QuickStart.Options.parse("--jobs", Integer.toString(JOBS), "--concurrency", "64")
                .on(TestDatabases.url(), SCHEMA);

        QuickStart.Result result;
        try (PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8)) {
            result = QuickStart.run(options, out);
        }
        String text = printed.toString(StandardCharsets.UTF_8);

        assertThat(result.ok()).as(text).isTrue();
        assertThat(result.enqueued()).isEqualTo(JOBS);
        assertThat(result.completed()).isEqualTo(JOBS);
        assertThat(result.notExactlyOnce()).isZero();
        assertThat(result.rejectedCompletions()).isZero();
        assertThat(text).contains("jobs completed: 500 of 500", "OK: every job was completed exactly once",
                "schema " + SCHEMA + ": dropped", "maintenance: off");

        long claimBatches = printedNumber(text, "claim batches written \\(lease_claim_batches rows\\)");
        long closureBatches = printedNumber(text, "completion batches written \\(lease_claim_closure_batches rows\\)");
        long historyBatches = printedNumber(text,
                "completion history batches written \\(receipt_completion_batches rows\\)");
        assertThat(claimBatches).as(text).isPositive().isLessThan(JOBS).isEqualTo(result.claimBatches());
        assertThat(closureBatches).as(text).isPositive().isLessThan(JOBS).isEqualTo(result.closureBatches());
        assertThat(historyBatches).as(text).isPositive().isLessThan(JOBS).isEqualTo(result.completionBatches());

        assertThat(result.stats().claimedJobs()).isEqualTo(JOBS);
        assertThat(result.stats().completed()).isEqualTo(JOBS);
        assertThat(result.counts().completed()).isEqualTo(JOBS);
        assertThat(result.counts().available()).isZero();
        assertThat(result.counts().inFlight()).isZero();
    }

    @Test
    void parsesFlagsAndRejectsNonsense() {
        QuickStart.Options defaults = QuickStart.Options.parse();
        assertThat(defaults.jobs()).isEqualTo(10_000);
        assertThat(defaults.concurrency()).isEqualTo(64);
        assertThat(defaults.schema()).isEqualTo("riffle_quickstart");
        assertThat(defaults.maintenance()).isFalse();
        assertThat(QuickStart.Options.parse("--maintenance", "on").maintenance()).isTrue();
        assertThatThrownBy(() -> QuickStart.Options.parse("--maintenance", "maybe")).hasMessageContaining("on or off");

        QuickStart.Options o = QuickStart.Options.parse("--jobs=1_000", "--concurrency", "8", "--work-ms", "2");
        assertThat(o.jobs()).isEqualTo(1000);
        assertThat(o.concurrency()).isEqualTo(8);
        assertThat(o.workMillis()).isEqualTo(2);

        assertThatThrownBy(() -> QuickStart.Options.parse("--jobs", "0")).hasMessageContaining("--jobs");
        assertThatThrownBy(() -> QuickStart.Options.parse("--concurrency")).hasMessageContaining("needs a value");
        assertThatThrownBy(() -> QuickStart.Options.parse("--speed", "9")).hasMessageContaining("unknown flag");
        assertThatThrownBy(() -> QuickStart.Options.parse("--jobs", "many")).hasMessageContaining("whole number");
    }

    private static long printedNumber(String text, String label) {
        Matcher m = Pattern.compile("(?m)^" + label + ": (\\d+)").matcher(text);
        assertThat(m.find()).as("'%s' in:%n%s", label, text).isTrue();
        return Long.parseLong(m.group(1));
    }
}
