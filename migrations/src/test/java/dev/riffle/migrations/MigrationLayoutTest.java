package dev.riffle.migrations;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layout rule of docs/adr/0007, checked on the migration resources: versioned files hold tables and never a
 * function; repeatable files hold functions only, each {@code CREATE OR REPLACE}, each defined exactly once; a
 * {@code LANGUAGE sql} function (validated when it is created) only calls functions that load before it.
 */
class MigrationLayoutTest {

    private static final Path DIR = Path.of("src", "main", "resources", "db", "riffle", "migration");
    private static final Pattern VERSIONED = Pattern.compile("V\\d+__[a-z0-9_]+\\.sql");
    private static final Pattern REPEATABLE = Pattern.compile("R__\\d\\d_[a-z0-9_]+\\.sql");
    private static final Pattern ANY_FUNCTION = Pattern.compile(
            "(?i)\\bCREATE\\s+(OR\\s+REPLACE\\s+)?(FUNCTION|PROCEDURE)\\b");
    private static final Pattern DEFINITION = Pattern.compile(
            "CREATE OR REPLACE FUNCTION \\$\\{schema}\\.(\\w+)\\(");
    private static final Pattern CALL = Pattern.compile("\\$\\{schema}\\.(\\w+)\\(");

    /** A function as written in a repeatable file. */
    private record Function(String name, String file, int position, String text) {}

    private static final Map<String, String> VERSIONED_FILES = new LinkedHashMap<>();
    private static final Map<String, String> REPEATABLE_FILES = new LinkedHashMap<>();

    @BeforeAll
    static void read() throws IOException {
        assertThat(DIR).as("tests run from the migrations module directory").isDirectory();
        List<Path> files;
        try (Stream<Path> s = Files.list(DIR)) {
            files = s.sorted().toList();
        }
        for (Path p : files) {
            String name = p.getFileName().toString();
            String text = Files.readString(p, StandardCharsets.UTF_8);
            if (VERSIONED.matcher(name).matches()) {
                VERSIONED_FILES.put(name, text);
            } else {
                assertThat(name).as("every migration file is V<n>__<name>.sql or R__<nn>_<mechanism>.sql")
                        .matches(REPEATABLE);
                REPEATABLE_FILES.put(name, text);
            }
        }
        assertThat(VERSIONED_FILES).isNotEmpty();
        assertThat(REPEATABLE_FILES).isNotEmpty();
    }

    /** The text outside comments and dollar-quoted bodies: the top-level statements. */
    static String topLevel(String sql) {
        String noBodies = sql.replaceAll("(?s)\\$\\$.*?\\$\\$", "\\$\\$\\$\\$");
        return noBodies.replaceAll("(?m)--.*$", "");
    }

    private static List<Function> functions() {
        List<Function> out = new ArrayList<>();
        int position = 0;
        // Flyway applies repeatables in the order of their descriptions; for R__<nn>_ names that is file name order.
        for (Map.Entry<String, String> e : REPEATABLE_FILES.entrySet()) {
            String text = e.getValue();
            Matcher m = DEFINITION.matcher(text);
            List<Integer> starts = new ArrayList<>();
            List<String> names = new ArrayList<>();
            while (m.find()) {
                starts.add(m.start());
                names.add(m.group(1));
            }
            for (int i = 0; i < starts.size(); i++) {
                int next = i + 1 < starts.size() ? starts.get(i + 1) : text.length();
                String definition = text.substring(starts.get(i), next);
                int end = definition.indexOf("\n$$;");
                assertThat(end).as("%s in %s ends with a line '$$;'", names.get(i), e.getKey()).isPositive();
                out.add(new Function(names.get(i), e.getKey(), position++, definition.substring(0, end + 4)));
            }
        }
        return out;
    }

    @Test
    void versionedFilesDefineNoFunction() {
        VERSIONED_FILES.forEach((file, text) ->
                assertThat(ANY_FUNCTION.matcher(text).find()).as("%s defines a function", file).isFalse());
    }

    @Test
    void repeatableFilesHoldOnlyCreateOrReplaceFunction() {
        Pattern statement = Pattern.compile("(?s)\\S.*?;");
        REPEATABLE_FILES.forEach((file, text) -> {
            Matcher m = statement.matcher(topLevel(text));
            int n = 0;
            while (m.find()) {
                // The one other statement: a generator writing per-slot functions (define_*), called where defined.
                if (m.group().matches("SELECT \\$\\{schema\\}\\.define_\\w+\\(\\);")) {
                    String generator = m.group().substring("SELECT ${schema}.".length(), m.group().indexOf('('));
                    assertThat(topLevel(text)).as("%s defines the generator it calls", file)
                            .contains("CREATE OR REPLACE FUNCTION ${schema}." + generator + "()");
                    continue;
                }
                n++;
                assertThat(m.group()).as("top-level statement in %s", file).startsWith("CREATE OR REPLACE FUNCTION ${schema}.");
            }
            assertThat(n).as("functions in %s", file).isPositive();
            Matcher any = ANY_FUNCTION.matcher(topLevel(text));
            while (any.find()) {
                assertThat(any.group(1)).as("%s: every definition is CREATE OR REPLACE", file).isNotNull();
            }
        });
    }

    @Test
    void everyFunctionIsDefinedExactlyOnce() {
        Map<String, String> seen = new LinkedHashMap<>();
        for (Function f : functions()) {
            String before = seen.putIfAbsent(f.name(), f.file());
            assertThat(before).as("%s is defined in %s and again in %s", f.name(), before, f.file()).isNull();
        }
        assertThat(seen).containsKeys("claim_ready", "complete_compact", "close_attempts", "prune_ring", "contract_version");
    }

    @Test
    void sqlFunctionsOnlyCallFunctionsThatLoadBeforeThem() {
        List<Function> all = functions();
        Map<String, Function> byName = new LinkedHashMap<>();
        all.forEach(f -> byName.put(f.name(), f));
        for (Function f : all) {
            if (!f.text().contains("LANGUAGE sql")) {
                continue;
            }
            String body = f.text().substring(f.text().indexOf("$$"));
            Matcher call = CALL.matcher(body);
            while (call.find()) {
                Function callee = byName.get(call.group(1));
                if (callee == null) {
                    continue; // a table or view, or a built-in
                }
                assertThat(callee.position()).as("LANGUAGE sql %s (%s) calls %s (%s), which must load first",
                        f.name(), f.file(), callee.name(), callee.file()).isLessThan(f.position());
            }
        }
    }

    @Test
    void theContractVersionLoadsLast() {
        List<Function> all = functions();
        String last = all.get(all.size() - 1).file();
        assertThat(all.stream().filter(f -> f.name().equals("contract_version")).findFirst().orElseThrow().file())
                .as("contract_version() lives in the file Flyway applies last").isEqualTo(last);
    }

    @Test
    void topLevelStripsBodiesAndComments() {
        String sql = "-- c\nCREATE OR REPLACE FUNCTION ${schema}.f() RETURNS int\nLANGUAGE sql AS $$\n"
                + "    SELECT 1; -- x\n$$;\n";
        assertThat(topLevel(sql)).isEqualTo("\nCREATE OR REPLACE FUNCTION ${schema}.f() RETURNS int\nLANGUAGE sql AS $$$$;\n");
    }
}
