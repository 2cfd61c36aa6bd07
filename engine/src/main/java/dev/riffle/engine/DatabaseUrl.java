package dev.riffle.engine;

import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A PostgreSQL location parsed from any of the URL forms users have at hand.
 *
 * <p>Accepted: {@code r2dbc:postgresql://}, {@code r2dbc:pool:postgresql://}, {@code postgresql://},
 * {@code postgres://} and {@code jdbc:postgresql://}. User and password may come from the authority
 * ({@code user:secret@host}) or from {@code user=}/{@code password=} query parameters. A missing port means 5432
 * and a missing user means {@code postgres}; the database name is required (no silent default: the server's
 * {@code postgres} database is rarely where an application's jobs belong).
 *
 * @param host host name or address
 * @param port TCP port
 * @param database database name
 * @param user user name
 * @param password password, or {@code null} for trust/peer authentication
 * @param options remaining query parameters, in order; only the TLS options in {@link #SUPPORTED_OPTIONS} are
 *                accepted, and they are passed to both the R2DBC driver and Flyway's JDBC connection
 */
public record DatabaseUrl(String host, int port, String database, String user, @Nullable String password,
                          Map<String, String> options) {

    /**
     * Query options the engine understands (libpq names): {@code sslmode} (disable, allow, prefer, require,
     * verify-ca, verify-full), and the file paths {@code sslrootcert}, {@code sslcert}, {@code sslkey} (an
     * unencrypted key: a key password would have to travel in Flyway's JDBC URL). Anything else is refused rather
     * than silently ignored.
     */
    public static final java.util.Set<String> SUPPORTED_OPTIONS =
            java.util.Set.of("sslmode", "sslrootcert", "sslcert", "sslkey");

    private static final java.util.Set<String> SSL_MODES =
            java.util.Set.of("disable", "allow", "prefer", "require", "verify-ca", "verify-full");

    /** Validates and freezes the options map. */
    public DatabaseUrl {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(database, "database");
        Objects.requireNonNull(user, "user");
        if (port <= 0 || port > 65535) {
            throw new IllegalArgumentException("port out of range: " + port);
        }
        for (Map.Entry<String, String> o : options.entrySet()) {
            if (!SUPPORTED_OPTIONS.contains(o.getKey())) {
                throw new IllegalArgumentException("unsupported connection option '" + o.getKey() + "' (supported: "
                        + new java.util.TreeSet<>(SUPPORTED_OPTIONS) + ")");
            }
        }
        String mode = options.get("sslmode");
        if (mode != null && !SSL_MODES.contains(mode)) {
            throw new IllegalArgumentException("sslmode must be one of " + new java.util.TreeSet<>(SSL_MODES) + ", got '"
                    + mode + "'");
        }
        options = Collections.unmodifiableMap(new LinkedHashMap<>(options));
    }

    /**
     * Parses a URL in any accepted form.
     *
     * @throws IllegalArgumentException with the reason when the text is not a PostgreSQL URL
     */
    public static DatabaseUrl parse(String url) {
        Objects.requireNonNull(url, "url");
        String s = url.trim();
        String rest;
        if (s.startsWith("r2dbc:pool:postgresql://")) {
            rest = s.substring("r2dbc:pool:postgresql://".length());
        } else if (s.startsWith("r2dbc:postgresql://")) {
            rest = s.substring("r2dbc:postgresql://".length());
        } else if (s.startsWith("jdbc:postgresql://")) {
            rest = s.substring("jdbc:postgresql://".length());
        } else if (s.startsWith("postgresql://")) {
            rest = s.substring("postgresql://".length());
        } else if (s.startsWith("postgres://")) {
            rest = s.substring("postgres://".length());
        } else {
            throw new IllegalArgumentException("not a PostgreSQL URL (expected r2dbc:postgresql://, postgresql://, "
                    + "postgres:// or jdbc:postgresql://): " + redact(s));
        }
        URI uri;
        try {
            uri = URI.create("pg://" + rest);
        } catch (IllegalArgumentException e) {
            // No cause attached: URI's message quotes the whole input, password included.
            throw new IllegalArgumentException("malformed PostgreSQL URL: " + redact(s));
        }
        String host = uri.getHost();
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException("PostgreSQL URL has no host: " + redact(s));
        }
        int port = uri.getPort() < 0 ? 5432 : uri.getPort();
        String path = uri.getRawPath();
        if (path == null || path.length() <= 1) {
            throw new IllegalArgumentException("PostgreSQL URL names no database: a database name is required, e.g. "
                    + "postgresql://db.example:5432/app (got " + redact(s) + ")");
        }
        String database = decode(path.substring(1));
        String user = null;
        String password = null;
        String userInfo = uri.getRawUserInfo();
        if (userInfo != null && !userInfo.isEmpty()) {
            int colon = userInfo.indexOf(':');
            user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon));
            password = colon < 0 ? null : decode(userInfo.substring(colon + 1));
        }
        Map<String, String> options = new LinkedHashMap<>();
        String query = uri.getRawQuery();
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&")) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String k = decode(eq < 0 ? pair : pair.substring(0, eq));
                String v = eq < 0 ? "" : decode(pair.substring(eq + 1));
                if (k.equals("user")) {
                    user = v;
                } else if (k.equals("password")) {
                    password = v;
                } else {
                    options.put(k, v);
                }
            }
        }
        return new DatabaseUrl(host, port, database, user == null ? "postgres" : user, password, options);
    }

    /** The JDBC form (used only for Flyway), with the TLS options; credentials are passed separately. */
    public String jdbcUrl() {
        StringBuilder b = new StringBuilder("jdbc:postgresql://").append(host).append(':').append(port).append('/')
                .append(encode(database));
        char sep = '?';
        for (Map.Entry<String, String> o : options.entrySet()) {
            b.append(sep).append(o.getKey()).append('=').append(encode(o.getValue()));
            sep = '&';
        }
        return b.toString();
    }

    /** The R2DBC form including the user (never the password). */
    public String r2dbcUrl() {
        return "r2dbc:postgresql://" + encode(user) + "@" + host + ":" + port + "/" + encode(database);
    }

    /** Same location, other database. */
    public DatabaseUrl withDatabase(String otherDatabase) {
        return new DatabaseUrl(host, port, otherDatabase, user, password, options);
    }

    @Override
    public String toString() {
        return "DatabaseUrl[" + r2dbcUrl() + (password == null ? "" : " (password set)") + "]";
    }

    private static String decode(String s) {
        // Percent-decoding only: '+' is a literal plus in a URL's userinfo and path (RFC 3986, libpq), not a space.
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static String encode(String s) {
        // URLEncoder writes form encoding; a space must be %20 here because decode() keeps '+' literal.
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * Masks anything that may be a password: the userinfo after its first ':' (up to the LAST '@', so a password
     * holding '/' or '@' is covered, with or without a well-formed scheme) and every {@code password=} parameter.
     */
    static String redact(String s) {
        String out = s.replaceAll("(?i)(password=)[^&]*", "$1***");
        int at = out.lastIndexOf('@');
        if (at >= 0) {
            int start = out.indexOf("://");
            start = start >= 0 && start < at ? start + 3 : 0;
            int colon = out.indexOf(':', start);
            if (colon >= 0 && colon < at) {
                out = out.substring(0, colon + 1) + "***" + out.substring(at);
            }
        }
        return out;
    }
}
