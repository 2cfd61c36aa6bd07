package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.StringJoiner;

/** Blocking JDBC plumbing shared by the locator, the extension and {@link TestDatabase}. */
final class Jdbc {

    /**
     * R2DBC-style option names (as users write them in {@code RIFFLE_TEST_DATABASE_URL}) mapped to pgjdbc's names.
     * Only TLS settings are carried over: without them a server that requires TLS could not be reached by the blocking
     * helpers even though the engine can reach it. Other options (e.g. {@code options}, {@code schema}) mean different
     * things to the two drivers, so they are deliberately dropped.
     */
    private static final Map<String, String> CARRIED_OPTIONS = Map.of(
            "sslmode", "sslmode",
            "sslrootcert", "sslrootcert",
            "sslcert", "sslcert",
            "sslkey", "sslkey",
            "sslpassword", "sslpassword");

    private Jdbc() {}

    /** The JDBC URL for {@code url}, keeping its TLS options. */
    static String jdbcUrl(DatabaseUrl url) {
        StringJoiner query = new StringJoiner("&", "?", "").setEmptyValue("");
        url.options().forEach((key, value) -> {
            String jdbcKey = CARRIED_OPTIONS.get(key.toLowerCase(Locale.ROOT));
            if (jdbcKey != null) {
                query.add(jdbcKey + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8));
            }
        });
        return url.jdbcUrl() + query;
    }

    /** Opens a new connection; the timeouts keep a dead or firewalled server from hanging a test run. */
    static Connection connect(DatabaseUrl url) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", url.user());
        if (url.password() != null) {
            props.setProperty("password", url.password());
        }
        props.setProperty("connectTimeout", "5");
        props.setProperty("loginTimeout", "10");
        props.setProperty("ApplicationName", "riffle-test");
        return DriverManager.getConnection(jdbcUrl(url), props);
    }

    /** Double-quotes an identifier, for names that were validated but must still never be spliced in raw. */
    static String quote(String identifier) {
        return "\"" + identifier.replace("\"", "\"\"") + "\"";
    }
}
