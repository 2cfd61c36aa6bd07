package dev.riffle.engine.internal.sql;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The engine's contract version and the one the migrations it ships with install are the same number. */
class SchemaContractTest {

    @Test
    void engineSupportsTheContractItsMigrationsInstall() throws IOException {
        String sql;
        try (InputStream in = SchemaContractTest.class.getResourceAsStream("/db/riffle/migration/R__90_contract.sql")) {
            assertThat(in).as("R__90_contract.sql on the classpath (riffle-migrations)").isNotNull();
            sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Matcher m = Pattern.compile("(?s)FUNCTION \\$\\{schema}\\.contract_version\\(\\) RETURNS int\\s+"
                + "LANGUAGE sql IMMUTABLE AS \\$\\$\\s+SELECT (\\d+)\\s+\\$\\$;").matcher(sql);
        assertThat(m.find()).as("contract_version() in R__90_contract.sql:%n%s", sql).isTrue();
        assertThat(Integer.parseInt(m.group(1))).isEqualTo(SchemaContract.VERSION);
    }
}
