package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A table in a doc generated from an enum, between two marker lines: {@link #check} fails when the doc's table is
 * not the generated one, and with {@code -Driffle.docs.write=true} rewrites it first.
 */
final class DocTable {
    private DocTable() {}

    static void check(Path doc, String begin, String end, String table) throws IOException {
        String text = Files.readString(doc, StandardCharsets.UTF_8);
        int from = text.indexOf(begin);
        int to = text.indexOf(end);
        assertThat(from).as("marker in %s", doc).isNotNegative();
        assertThat(to).isGreaterThan(from);
        String expected = begin + "\n\n" + table + "\n" + end;
        if (Boolean.getBoolean("riffle.docs.write")) {
            text = text.substring(0, from) + expected + text.substring(to + end.length());
            Files.writeString(doc, text, StandardCharsets.UTF_8);
            to = text.indexOf(end);
        }
        assertThat(text.substring(from, to + end.length())).isEqualTo(expected);
    }
}
