package dev.riffle.engine.internal.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class SqlCatalogTest {

    private static final String SCHEMA = "riffle_ut";
    private static final Path MAIN_JAVA = Path.of("src", "main", "java");

    /**
     * Statements the catalog may carry without a Java caller. Each entry must name a real statement that really is
     * unreferenced (checked below), so the list cannot go stale silently. Keep it empty unless there is a reason.
     */
    private static final Set<String> KNOWN_UNREFERENCED = Set.of();

    // The catalog plumbing forwards names it receives; it references no statement of its own.
    private static final Set<String> PLUMBING = Set.of("Db.java", "SqlCatalog.java");

    private static final Pattern QUERY_CALL =
            Pattern.compile("\\b\\w*[dD]b(?:\\(\\))?\\s*\\.\\s*query\\s*\\(\\s*(\"[^\"]*\"|\\w+)\\s*,\\s*(\"[^\"]*\"|[\\w(]+)?");
    private static final Pattern GET_CALL = Pattern.compile("\\bsql(?:\\(\\))?\\s*\\.\\s*get\\s*\\(\\s*(\"[^\"]*\"|\\w+)\\s*\\)");
    private static final Pattern ANY_QUERY_CALL = Pattern.compile("\\.\\s*query\\s*\\(");
    private static final Pattern LITERAL = Pattern.compile("\"([^\"\\\\]*)\"");

    private static SqlCatalog catalog;

    @BeforeAll
    static void load() {
        catalog = SqlCatalog.load(SCHEMA);
    }

    private static String resource(String file) {
        try (InputStream in = SqlCatalog.class.getResourceAsStream("/dev/riffle/engine/sql/" + file)) {
            assertThat(in).as("resource %s", file).isNotNull();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void loadsEveryFile() {
        assertThat(SqlCatalog.FILES).containsExactlyInAnyOrder("hotpath.sql", "admin.sql", "maintenance.sql");
        assertThat(catalog.names()).contains("enqueue", "claim", "complete", "close", "counts", "promote", "rotate", "prune");
    }

    @Test
    void catalogNamesMatchTheResourceHeaders() {
        Set<String> declared = new TreeSet<>();
        Pattern header = Pattern.compile("(?m)^\\s*--\\s*name:\\s*(\\S+)\\s*$");
        for (String file : SqlCatalog.FILES) {
            Matcher m = header.matcher(resource(file));
            while (m.find()) {
                assertThat(declared.add(m.group(1))).as("'%s' declared once", m.group(1)).isTrue();
            }
        }
        assertThat(new TreeSet<>(catalog.names())).isEqualTo(declared);
    }

    @Test
    void noPlaceholderRemains() {
        for (String name : catalog.names()) {
            assertThat(catalog.get(name)).as(name).doesNotContain("${").doesNotContain("$schema");
        }
    }

    /** Names of the statements whose resource text uses a schema placeholder. */
    private static Set<String> statementsWithPlaceholders() {
        Set<String> out = new TreeSet<>();
        for (String file : SqlCatalog.FILES) {
            String name = null;
            for (String line : resource(file).split("\n")) {
                String t = line.strip();
                if (t.startsWith("-- name:")) {
                    name = t.substring("-- name:".length()).strip();
                } else if (name != null && t.contains("${schema")) {
                    out.add(name);
                }
            }
        }
        return out;
    }

    @Test
    void schemaAppearsOnlyQuoted() {
        Set<String> placeholders = statementsWithPlaceholders();
        assertThat(placeholders).contains("enqueue", "claim", "schema_contract", "contract_version", "leader_try_lock")
                .doesNotContain("ping");
        Pattern bare = Pattern.compile("(?<![\"'])\\b" + SCHEMA + "\\b|\\b" + SCHEMA + "\\b(?!\")");
        for (String name : catalog.names()) {
            String sql = catalog.get(name);
            if (placeholders.contains(name)) {
                assertThat(sql).as(name).contains("\"" + SCHEMA + "\"");
            } else {
                assertThat(sql).as(name).doesNotContain(SCHEMA);
            }
            assertThat(bare.matcher(sql).find()).as("bare schema name in '%s':%n%s", name, sql).isFalse();
        }
        assertThat(catalog.get("claim")).contains("\"" + SCHEMA + "\".claim_ready(");
    }

    @Test
    void schemaLiteralBecomesAQuotedIdentifierInsideAStringLiteral() {
        assertThat(catalog.get("schema_contract")).contains("'\"" + SCHEMA + "\"' || '.contract_version()'");
        assertThat(catalog.get("leader_try_lock")).contains("hashtextextended('\"" + SCHEMA + "\"' || '.maintenance'");
        // Lock and unlock must hash the same key, or the leader could never release what it took.
        assertThat(catalog.get("leader_unlock")).contains("hashtextextended('\"" + SCHEMA + "\"' || '.maintenance', 0)");
    }

    @Test
    void differentSchemasGiveDifferentText() {
        SqlCatalog other = SqlCatalog.load("other_schema");
        assertThat(other.get("enqueue")).contains("\"other_schema\".enqueue_jobs(").doesNotContain(SCHEMA);
        assertThat(catalog.get("enqueue")).doesNotContain("other_schema");
    }

    @Test
    void commentsAreStrippedAndStatementsTrimmed() {
        for (String name : catalog.names()) {
            String sql = catalog.get(name);
            assertThat(sql).as(name).isEqualTo(sql.strip()).doesNotContain("-- name:");
            assertThat(sql.lines().filter(l -> l.strip().startsWith("--"))).as(name).isEmpty();
        }
        assertThat(catalog.get("ping")).isEqualTo("SELECT 1 AS one");
    }

    @Test
    void unknownNameFailsLoudly() {
        assertThatThrownBy(() -> catalog.get("no_such_statement"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no_such_statement");
    }

    @Test
    void namesAreReadOnly() {
        assertThatThrownBy(() -> catalog.names().add("x")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void parserRejectsDuplicatesAndEmptyStatements() {
        assertThatThrownBy(() -> SqlCatalog.parseInto("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n", "f.sql", "s",
                new HashMap<>())).isInstanceOf(IllegalStateException.class).hasMessageContaining("'a'").hasMessageContaining("twice");
        assertThatThrownBy(() -> SqlCatalog.parseInto("-- name: a\n-- just a comment\n\n-- name: b\nSELECT 1", "f.sql", "s",
                new HashMap<>())).isInstanceOf(IllegalStateException.class).hasMessageContaining("'a'").hasMessageContaining("empty");
        Map<String, String> first = new HashMap<>();
        SqlCatalog.parseInto("-- name: a\nSELECT 1\n", "one.sql", "s", first);
        assertThatThrownBy(() -> SqlCatalog.parseInto("-- name: a\nSELECT 2\n", "two.sql", "s", first))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("two.sql");
    }

    @Test
    void parserIgnoresPreambleAndHandlesCrlf() {
        Map<String, String> out = new LinkedHashMap<>();
        SqlCatalog.parseInto("SELECT 'preamble'\r\n-- name: a\r\nSELECT *\r\n  FROM ${schema}.t\r\n-- name: b\r\nSELECT 2",
                "f.sql", "s", out);
        assertThat(out).containsOnlyKeys("a", "b");
        assertThat(out.get("a").replace("\r", "")).isEqualTo("SELECT *\n  FROM \"s\".t");
        assertThat(out.get("b")).isEqualTo("SELECT 2");
    }

    // ---- every statement has a caller, every caller has a statement ----

    @Test
    void everyStatementNamedInMainCodeExists() throws IOException {
        Map<String, List<String>> referenced = referencedNames();
        assertThat(referenced).as("no statement references found under %s", MAIN_JAVA.toAbsolutePath()).isNotEmpty();
        for (Map.Entry<String, List<String>> e : referenced.entrySet()) {
            assertThat(catalog.names()).as("statement '%s' used at %s", e.getKey(), e.getValue()).contains(e.getKey());
        }
    }

    @Test
    void everyStatementIsUsedByMainCode() throws IOException {
        Set<String> unused = new TreeSet<>(catalog.names());
        unused.removeAll(referencedNames().keySet());
        assertThat(unused).as("catalog statements no Java code uses").isEqualTo(new TreeSet<>(KNOWN_UNREFERENCED));
    }

    @Test
    void referenceScannerSeesTheIndirectCompletionNames() throws IOException {
        // complete/close are chosen through a local variable; the scanner must follow it or it is blind there.
        Map<String, List<String>> referenced = referencedNames();
        assertThat(referenced.get("complete")).anyMatch(where -> where.startsWith("CompletionBatcher.java"));
        assertThat(referenced.get("close")).anyMatch(where -> where.startsWith("CompletionBatcher.java"));
        assertThat(referenced.get("ping")).anyMatch(where -> where.startsWith("Leadership.java"));
        assertThat(referenced.get("enqueue")).anyMatch(where -> where.startsWith("Enqueuer.java"));
    }

    /** Statement name to the places ({@code File.java:line}) that use it. */
    private static Map<String, List<String>> referencedNames() throws IOException {
        assertThat(MAIN_JAVA).as("tests run from the engine module directory").isDirectory();
        Map<String, List<String>> out = new TreeMap<>();
        List<Path> sources;
        try (Stream<Path> s = Files.walk(MAIN_JAVA)) {
            sources = s.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        for (Path p : sources) {
            String file = p.getFileName().toString();
            if (PLUMBING.contains(file)) {
                continue;
            }
            String code = stripComments(Files.readString(p));
            int queryCalls = 0;
            int recognised = 0;
            Matcher any = ANY_QUERY_CALL.matcher(code);
            while (any.find()) {
                queryCalls++;
            }
            Matcher q = QUERY_CALL.matcher(code);
            while (q.find()) {
                recognised++;
                String first = q.group(1);
                String second = q.group(2);
                // db.query(connection, "name", ...) puts the name second.
                String nameArg = !first.startsWith("\"") && second != null && second.startsWith("\"") ? second : first;
                record(out, code, file, q.start(), nameArg);
            }
            assertThat(recognised).as("every .query( call in %s is a recognised db.query call", file).isEqualTo(queryCalls);
            Matcher g = GET_CALL.matcher(code);
            while (g.find()) {
                record(out, code, file, g.start(), g.group(1));
            }
        }
        return out;
    }

    private static void record(Map<String, List<String>> out, String code, String file, int at, String arg) {
        String where = file + ":" + (code.substring(0, at).split("\n", -1).length);
        List<String> names = new ArrayList<>();
        if (arg.startsWith("\"")) {
            names.add(arg.substring(1, arg.length() - 1));
        } else {
            // A local String holding the name: take every literal of its initialiser (e.g. a ternary).
            Matcher decl = Pattern.compile("\\bString\\s+" + Pattern.quote(arg) + "\\s*=\\s*([^;]+);").matcher(code);
            assertThat(decl.find()).as("statement name variable '%s' at %s resolves to a local String", arg, where).isTrue();
            Matcher lit = LITERAL.matcher(decl.group(1));
            while (lit.find()) {
                names.add(lit.group(1));
            }
            assertThat(names).as("literals assigned to '%s' at %s", arg, where).isNotEmpty();
        }
        for (String n : names) {
            out.computeIfAbsent(n, k -> new ArrayList<>()).add(where);
        }
    }

    /** Removes comments but keeps line breaks and string literals, so line numbers stay right. */
    static String stripComments(String src) {
        StringBuilder b = new StringBuilder(src.length());
        int n = src.length();
        int i = 0;
        while (i < n) {
            char c = src.charAt(i);
            if (c == '"' || c == '\'') {
                int j = i + 1;
                while (j < n && src.charAt(j) != c) {
                    j += src.charAt(j) == '\\' ? 2 : 1;
                }
                j = Math.min(j + 1, n);
                b.append(src, i, j);
                i = j;
            } else if (c == '/' && i + 1 < n && src.charAt(i + 1) == '/') {
                while (i < n && src.charAt(i) != '\n') {
                    i++;
                }
            } else if (c == '/' && i + 1 < n && src.charAt(i + 1) == '*') {
                int end = src.indexOf("*/", i + 2);
                end = end < 0 ? n : end + 2;
                for (int k = i; k < end; k++) {
                    if (src.charAt(k) == '\n') {
                        b.append('\n');
                    }
                }
                i = end;
            } else {
                b.append(c);
                i++;
            }
        }
        return b.toString();
    }

    @Test
    void commentStripperKeepsStringsAndLines() {
        String src = "a(\"http://x\"); // db.query(\"ghost\", x)\n/* db.query(\"ghost2\",\n y) */ b('/');\n";
        String out = stripComments(src);
        assertThat(out).isEqualTo("a(\"http://x\"); \n\n b('/');\n");
    }
}
