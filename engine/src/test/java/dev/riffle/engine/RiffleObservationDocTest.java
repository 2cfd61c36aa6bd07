package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.api.RiffleObservation;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * docs/tracing.md's observation table is generated from {@link RiffleObservation}: this test fails when they differ.
 * Run it with {@code -Driffle.docs.write=true} to rewrite the table between its markers.
 */
class RiffleObservationDocTest {
    private static final Path DOC = Path.of("..", "docs", "tracing.md");
    private static final String BEGIN =
            "<!-- observations:begin (generated from RiffleObservation by RiffleObservationDocTest) -->";
    private static final String END = "<!-- observations:end -->";

    static String table() {
        StringBuilder b = new StringBuilder();
        b.append("| Observation | Span name | Low-cardinality keys | High-cardinality keys | Meaning |\n");
        b.append("|---|---|---|---|---|\n");
        for (RiffleObservation o : RiffleObservation.values()) {
            b.append("| `").append(o.observationName()).append("` | `").append(o.contextualName())
                    .append(o == RiffleObservation.COMPLETE ? "" : o == RiffleObservation.HANDLE ? " <kind>" : " <queue>")
                    .append("` | ").append(RiffleMeter.SCHEMA_TAG);
            o.lowCardinalityKeys().forEach(k -> b.append(", ").append(k));
            b.append(" | ").append(o.highCardinalityKeys().isEmpty() ? "-" : String.join(", ", o.highCardinalityKeys()))
                    .append(" | ").append(o.description()).append(" |\n");
        }
        return b.toString();
    }

    @Test
    void theTracingTableIsTheEnums() throws IOException {
        DocTable.check(DOC, BEGIN, END, table());
    }

    @Test
    void namesAreUniqueAndClashWithNoMeter() {
        Set<String> names = new HashSet<>();
        for (RiffleMeter m : RiffleMeter.values()) {
            names.add(m.meterName());
        }
        for (RiffleObservation o : RiffleObservation.values()) {
            // Micrometer's meter handler registers a timer of the observation's name and a long task timer ".active".
            assertThat(names.add(o.observationName())).as("%s names a meter already", o).isTrue();
            assertThat(names.add(o.observationName() + ".active")).as("%s.active names a meter already", o).isTrue();
            assertThat(o.observationName()).startsWith("riffle.");
            assertThat(o.description()).isNotBlank();
            assertThat(o.lowCardinalityKeys()).doesNotContain(RiffleMeter.SCHEMA_TAG).doesNotHaveDuplicates();
        }
    }
}
