package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.RiffleMeter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * docs/operations.md's meter table is generated from {@link RiffleMeter}: this test fails when they differ. Run it
 * with {@code -Driffle.docs.write=true} to rewrite the table between its markers.
 */
class RiffleMeterDocTest {
    private static final Path DOC = Path.of("..", "docs", "operations.md");
    private static final String BEGIN = "<!-- meters:begin (generated from RiffleMeter by RiffleMeterDocTest) -->";
    private static final String END = "<!-- meters:end -->";

    static String table() {
        StringBuilder b = new StringBuilder();
        b.append("| Meter | Type | Unit | Tags | Meaning | Alert on |\n");
        b.append("|---|---|---|---|---|---|\n");
        for (RiffleMeter m : RiffleMeter.values()) {
            b.append("| `").append(m.meterName()).append("` | ").append(m.type().name().toLowerCase())
                    .append(" | ").append(m.unit().isEmpty() ? "-" : m.unit())
                    .append(" | ").append(String.join(", ", m.allTags()))
                    .append(" | ").append(m.description())
                    .append(" | ").append(m.alert().isEmpty() ? "" : m.alert()).append(" |\n");
        }
        return b.toString();
    }

    @Test
    void theOperationsTableIsTheEnums() throws IOException {
        DocTable.check(DOC, BEGIN, END, table());
    }

    @Test
    void namesAreUniqueAndTagsAreDeclared() {
        Set<String> names = new HashSet<>();
        for (RiffleMeter m : RiffleMeter.values()) {
            assertThat(names.add(m.meterName())).as("duplicate %s", m.meterName()).isTrue();
            assertThat(m.meterName()).startsWith("riffle.");
            assertThat(m.description()).isNotBlank();
            assertThat(m.tags()).doesNotContain(RiffleMeter.SCHEMA_TAG).doesNotHaveDuplicates();
        }
    }
}
