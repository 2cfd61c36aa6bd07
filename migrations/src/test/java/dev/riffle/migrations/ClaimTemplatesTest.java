package dev.riffle.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The two claim shapes each run one complete statement (claim_compact in R__30_claim.sql, claim_materialized in
 * R__70_long_attempts.sql). Their selection of the lane's rows, the receipt ids and the claim evidence (the sel,
 * items and evidence parts) must stay the same text, so a change to one is made to both.
 */
class ClaimTemplatesTest {

    private static final Path DIR = Path.of("src", "main", "resources", "db", "riffle", "migration");

    /** The statement template of the named function: the first $q$-quoted text after its definition (or the one
     *  its generator writes). */
    private static String template(String file, String function) throws IOException {
        String text = Files.readString(DIR.resolve(file), StandardCharsets.UTF_8);
        int at = text.indexOf("CREATE OR REPLACE FUNCTION ${schema}." + function + "(");
        assertThat(at).as("%s defined in %s", function, file).isNotNegative();
        Matcher m = Pattern.compile("(?s)\\$q\\$(.*?)\\$q\\$").matcher(text);
        assertThat(m.find(at)).as("%s has a $q$ template", function).isTrue();
        return m.group(1);
    }

    /** From the start of the statement to the end of the evidence insert. */
    private static String sharedPart(String template) {
        int start = template.indexOf("WITH sel AS MATERIALIZED (");
        int evidence = template.indexOf("evidence AS (");
        int end = template.indexOf("HAVING count(*) > 0", evidence);
        assertThat(start).isNotNegative();
        assertThat(evidence).isGreaterThan(start);
        assertThat(end).isGreaterThan(evidence);
        return template.substring(start, end);
    }

    @Test
    void bothClaimShapesSelectAndRecordEvidenceWithTheSameText() throws IOException {
        // claim_compact's statement is written per ready slot by define_claim_compact.
        String compact = sharedPart(template("R__30_claim.sql", "define_claim_compact"));
        String materialized = sharedPart(template("R__70_long_attempts.sql", "claim_materialized"));
        assertThat(compact).contains("r.lane_seq < $4 + 2 * $6", "LIMIT $6", "nextval(", "INSERT INTO %1$s.%4$I");
        assertThat(materialized).isEqualTo(compact);
    }
}
