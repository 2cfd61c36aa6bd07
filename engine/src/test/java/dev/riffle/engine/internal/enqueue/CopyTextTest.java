package dev.riffle.engine.internal.enqueue;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.NewJob;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The COPY text rows of the bulk enqueue path (docs/bulk-enqueue.md): what COPY treats as special is escaped. */
class CopyTextTest {

    private static String text(String s) {
        StringBuilder sb = new StringBuilder();
        Enqueuer.appendCopyText(sb, s);
        return sb.toString();
    }

    @Test
    void backslashTabNewlineAndCarriageReturnAreEscapedAndNothingElse() {
        assertThat(text("a\tb\nc\rd\\e")).isEqualTo("a\\tb\\nc\\rd\\\\e");
        assertThat(text("{\"q\":\"\\\"\\u0041\\\\N\"}")).isEqualTo("{\"q\":\"\\\\\"\\\\u0041\\\\\\\\N\"}");
        assertThat(text("\\.")).isEqualTo("\\\\.");
        assertThat(text("é 日本 \uD83D\uDE80 ' \" , ;")).isEqualTo("é 日本 \uD83D\uDE80 ' \" , ;");
    }

    @Test
    void aRowHasEightTabSeparatedFieldsAndNullRunAtIsBackslashN() {
        StringBuilder sb = new StringBuilder();
        Enqueuer.appendRow(sb, 7, 3, NewJob.builder("k.ind").queue("q").args("{\"a\":\"x\\ty\"}").priority(1)
                .maxAttempts(4).build());
        Enqueuer.appendRow(sb, 7, 4, NewJob.builder("k").queue("q").args("{}")
                .runAt(Instant.parse("2030-01-02T03:04:05.123456Z")).build());
        assertThat(sb.toString()).isEqualTo("7\t3\tq\tk.ind\t{\"a\":\"x\\\\ty\"}\t1\t4\t\\N\n"
                + "7\t4\tq\tk\t{}\t2\t25\t2030-01-02T03:04:05.123456Z\n");
    }
}
