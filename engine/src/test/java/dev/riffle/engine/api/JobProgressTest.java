package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class JobProgressTest {

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "1", "{", "{\"a\":}", "{} {}", "{'a':1}"})
    void metadataMustBeOneJsonObjectNamedAsProgressMetadata(String bad) {
        assertThatThrownBy(() -> new JobProgress(10, "m", bad))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> {
                    assertThat(e.field()).isEqualTo("progress.metadata");
                    assertThat(e.getMessage()).startsWith("progress.metadata: ");
                });
    }

    @Test
    void aNulInTheMessageIsRefusedAsTheMessage() {
        // toJson() would carry it as a \u0000 escape, which jsonb refuses only once a heartbeat writes it.
        assertThatThrownBy(() -> new JobProgress(10, "a\0b", null))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> assertThat(e.field()).isEqualTo("progress.message"));
    }

    @Test
    void toJsonCarriesTheMetadataAsGiven() {
        assertThat(new JobProgress(40, "half \"way\"\n", "{\"cursor\":7}").toJson())
                .isEqualTo("{\"percent\":40,\"message\":\"half \\\"way\\\"\\n\",\"metadata\":{\"cursor\":7}}");
    }
}
