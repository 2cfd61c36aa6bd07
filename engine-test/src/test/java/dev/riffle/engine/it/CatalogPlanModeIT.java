package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * With the application's own {@code ConnectionPool} the engine sets nothing on its sessions, so the plan mode the
 * lock order relies on (docs/design/lock-order.md) cannot come from the session: every PL/pgSQL function the
 * engine's catalog calls must fix {@code plan_cache_mode} itself. Removing the {@code SET} from one of them (e.g.
 * {@code rescue_stale}) fails this test.
 */
@RiffleTest
class CatalogPlanModeIT {

    /** PL/pgSQL functions that run only dynamic SQL ({@code EXECUTE}, planned once per call, always custom). */
    private static final Set<String> DYNAMIC_ONLY = Set.of("ring_slot_count", "ring_cursor");

    private static String resource(String file) throws IOException {
        try (InputStream in = CatalogPlanModeIT.class.getResourceAsStream("/dev/riffle/engine/sql/" + file)) {
            assertThat(in).as(file).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void everyPlpgsqlFunctionTheCatalogCallsFixesItsPlanMode(TestDatabase db) throws IOException {
        Set<String> called = new TreeSet<>();
        Pattern call = Pattern.compile("\\$\\{schema}\\.([a-z_0-9]+)\\(");
        for (String file : List.of("hotpath.sql", "admin.sql", "maintenance.sql")) {
            Matcher m = call.matcher(resource(file));
            while (m.find()) {
                called.add(m.group(1));
            }
        }
        assertThat(called).contains("claim_ready", "rescue_stale", "heartbeat", "cancel_job");

        List<Map<String, Object>> rows = db.queryRows("SELECT p.proname AS name, coalesce(array_to_string(p.proconfig, ','), '') AS config "
                + "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang "
                + "WHERE n.nspname = ? AND l.lanname = 'plpgsql' AND p.proname = ANY (?::text[])",
                db.schema(), "{" + String.join(",", called) + "}");
        assertThat(rows).hasSizeGreaterThan(10);
        for (Map<String, Object> row : rows) {
            String name = (String) row.get("name");
            if (DYNAMIC_ONLY.contains(name)) {
                continue;
            }
            assertThat((String) row.get("config")).as("SET clause of %s", name).contains("plan_cache_mode=");
        }
    }
}
