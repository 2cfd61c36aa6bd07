package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ExternalCallbackPayloadTest {

    @Test
    void anObjectWithinTheLimitPasses() {
        assertThat(ExternalCallback.requirePayload("{\"ok\": [1, 2]}", 100)).isEqualTo("{\"ok\": [1, 2]}");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "1", "\"text\"", "{", "{\"a\":}", "{} {}"})
    void anythingButOneJsonObjectIsRejectedNamingThePayload(String bad) {
        assertThatThrownBy(() -> ExternalCallback.requirePayload(bad, 100))
                .isInstanceOfSatisfying(InvalidJobException.class, e -> {
                    assertThat(e.field()).isEqualTo("payload");
                    assertThat(e.getMessage()).startsWith("payload: ");
                });
    }

    @Test
    void theSizeLimitCountsUtf8Bytes() {
        String twoByteChars = "{\"k\":\"" + "é".repeat(10) + "\"}"; // 18 chars, 28 bytes
        assertThat(ExternalCallback.requirePayload(twoByteChars, 28)).isEqualTo(twoByteChars);
        assertThatThrownBy(() -> ExternalCallback.requirePayload(twoByteChars, 27))
                .isInstanceOf(InvalidJobException.class).hasMessageContaining("27 bytes");
    }

    @Test
    void nullIsRejected() {
        assertThatNullPointerException().isThrownBy(() -> ExternalCallback.requirePayload(null, 10));
    }
}
