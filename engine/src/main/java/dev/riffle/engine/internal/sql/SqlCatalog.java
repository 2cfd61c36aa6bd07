package dev.riffle.engine.internal.sql;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Named SQL statements loaded once from {@code dev/riffle/engine/sql/*.sql}, with the validated schema name
 * substituted. Statements are separated by {@code -- name: xxx} lines. No SQL is assembled from user input: the
 * only substitution is the schema, validated against {@code [a-z_][a-z0-9_]*} before it gets here.
 */
public final class SqlCatalog {

    /** Every resource file the catalog reads, one per plane. */
    static final String[] FILES = {"hotpath.sql", "admin.sql", "maintenance.sql"};

    private final Map<String, String> statements;

    private SqlCatalog(Map<String, String> statements) {
        this.statements = Map.copyOf(statements);
    }

    /** Loads all statements for {@code schema} (already validated). */
    public static SqlCatalog load(String schema) {
        Map<String, String> out = new HashMap<>();
        for (String file : FILES) {
            parseInto(read(file), file, schema, out);
        }
        return new SqlCatalog(out);
    }

    static void parseInto(String text, String file, String schema, Map<String, String> out) {
        String name = null;
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String trimmed = line.trim();
            if (trimmed.startsWith("-- name:")) {
                put(out, file, name, body);
                name = trimmed.substring("-- name:".length()).trim();
                body.setLength(0);
            } else if (name != null && !trimmed.startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        put(out, file, name, body);
        out.replaceAll((k, v) -> v.replace("${schema_literal}", "'\"" + schema + "\"'")
                .replace("${schema}", "\"" + schema + "\""));
    }

    private static void put(Map<String, String> out, String file, String name, StringBuilder body) {
        if (name == null) {
            return;
        }
        String sql = body.toString().strip();
        if (sql.isEmpty()) {
            throw new IllegalStateException("statement '" + name + "' in " + file + " is empty");
        }
        if (out.putIfAbsent(name, sql) != null) {
            throw new IllegalStateException("statement '" + name + "' is defined twice (" + file + ")");
        }
    }

    private static String read(String file) {
        String path = "/dev/riffle/engine/sql/" + file;
        try (InputStream in = SqlCatalog.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing SQL resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The statement named {@code name}; fails loudly for an unknown name. */
    public String get(String name) {
        String sql = statements.get(name);
        if (sql == null) {
            throw new IllegalArgumentException("no SQL statement named '" + name + "'");
        }
        return sql;
    }

    /** All statement names (for tests). */
    public java.util.Set<String> names() {
        return statements.keySet();
    }
}
