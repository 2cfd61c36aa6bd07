package dev.riffle.engine.internal.claim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.internal.sql.SqlCatalog;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Claimer reads the claim rows by position: its column list must be the statement's SELECT list, in order. */
class ClaimColumnsTest {

    // The name a select-list item is read by: its alias ("... AS name"), else the column after "c." or "h.".
    private static final Pattern ITEM = Pattern.compile("(?:\\bAS\\s+([a-z_]+)|^[ch]\\.([a-z_]+))$");

    @Test
    void claimerColumnsAreTheClaimStatementsSelectListInOrder() {
        SqlCatalog catalog = SqlCatalog.load("riffle_ut");
        assertThat(selectList(catalog.get("claim"))).containsExactlyElementsOf(Claimer.COLUMNS);
        assertThat(selectList(catalog.get("claim_limited"))).containsExactlyElementsOf(Claimer.COLUMNS);
    }

    @Test
    void theClaimFunctionIsNamedWithinTheQueryTextPgStatActivityShows() {
        // track_activity_query_size defaults to 1 kB: past it, pg_stat_activity no longer shows which function a
        // waiting claim is in (SubscriberCancelReleaseIT and operators look for it there).
        SqlCatalog catalog = SqlCatalog.load("riffle_ut");
        assertThat(catalog.get("claim").indexOf(".claim_ready(")).isBetween(0, 1000);
        assertThat(catalog.get("claim_limited").indexOf(".claim_limited(")).isBetween(0, 1000);
    }

    private static List<String> selectList(String sql) {
        String select = sql.substring(sql.indexOf("SELECT") + "SELECT".length(), sql.indexOf("\n  FROM"));
        List<String> names = new ArrayList<>();
        int depth = 0;
        StringBuilder item = new StringBuilder();
        for (char ch : (select + ",").toCharArray()) {
            if (ch == '(') {
                depth++;
            } else if (ch == ')') {
                depth--;
            }
            if (ch == ',' && depth == 0) {
                Matcher m = ITEM.matcher(item.toString().trim().replaceAll("\\s+", " "));
                assertThat(m.find()).as("select item %s", item).isTrue();
                names.add(m.group(1) != null ? m.group(1) : m.group(2));
                item.setLength(0);
            } else {
                item.append(ch);
            }
        }
        return names;
    }
}
