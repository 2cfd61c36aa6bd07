package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class DatabaseUrlTest {

    private static final String SECRET = "Hunter2secret";

    /** Everything a log line could show of the exception: message, causes, and their stack trace text. */
    private static String fullText(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "r2dbc:postgresql://alice:" + SECRET + "@db.example:6543/app?sslmode=require",
            "r2dbc:pool:postgresql://alice:" + SECRET + "@db.example:6543/app?sslmode=require",
            "postgresql://alice:" + SECRET + "@db.example:6543/app?sslmode=require",
            "postgres://alice:" + SECRET + "@db.example:6543/app?sslmode=require",
            "jdbc:postgresql://alice:" + SECRET + "@db.example:6543/app?sslmode=require",
            "jdbc:postgresql://db.example:6543/app?user=alice&password=" + SECRET + "&sslmode=require",
            "postgres://db.example:6543/app?sslmode=require&user=alice&password=" + SECRET,
            "  postgres://alice:" + SECRET + "@db.example:6543/app?sslmode=require \n",
    })
    void everyAcceptedFormGivesTheSameLocation(String text) {
        DatabaseUrl url = DatabaseUrl.parse(text);

        assertThat(url.host()).isEqualTo("db.example");
        assertThat(url.port()).isEqualTo(6543);
        assertThat(url.database()).isEqualTo("app");
        assertThat(url.user()).isEqualTo("alice");
        assertThat(url.password()).isEqualTo(SECRET);
        assertThat(url.options()).containsExactly(Map.entry("sslmode", "require"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"r2dbc:postgresql://db/app", "r2dbc:pool:postgresql://db/app", "postgresql://db/app",
            "postgres://db/app", "jdbc:postgresql://db/app", "postgres://db/app?"})
    void defaultsWhenOnlyTheHostAndDatabaseAreGiven(String text) {
        DatabaseUrl url = DatabaseUrl.parse(text);

        assertThat(url.host()).isEqualTo("db");
        assertThat(url.port()).isEqualTo(5432);
        assertThat(url.database()).isEqualTo("app");
        assertThat(url.user()).isEqualTo("postgres");
        assertThat(url.password()).isNull();
        assertThat(url.options()).isEmpty();
    }

    /**
     * No silent default database: the server's admin database is rarely where the application's jobs belong, and
     * a URL that forgot its database would otherwise migrate a schema into it without a word.
     */
    @ParameterizedTest
    @ValueSource(strings = {"r2dbc:postgresql://db", "r2dbc:pool:postgresql://db", "postgresql://db", "postgres://db",
            "jdbc:postgresql://db", "postgres://db/", "postgres://db?", "postgres://db/?", "postgres://db:6543/?sslmode=require",
            "postgres://alice:" + SECRET + "@db", "postgres://alice:" + SECRET + "@db:5432/",
            "postgres://db?user=alice&password=" + SECRET})
    void aUrlWithoutADatabaseIsRejectedWithAnExample(String text) {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class, () -> DatabaseUrl.parse(text));
        assertThat(e).as("parse(%s)", text).isNotNull();
        assertThat(e.getMessage()).contains("database name is required").contains("postgresql://db.example:5432/app");
        assertThat(fullText(e)).doesNotContain(SECRET);
    }

    @Test
    void tlsOptionsTravelInTheJdbcUrlForFlyway() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://alice@db:5432/app?sslmode=verify-full&sslrootcert=/etc/ca%20dir/root.crt");
        assertThat(url.options()).containsExactly(Map.entry("sslmode", "verify-full"),
                Map.entry("sslrootcert", "/etc/ca dir/root.crt"));
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://db:5432/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20dir%2Froot.crt");
        assertThat(DatabaseUrl.parse("postgres://db/app").jdbcUrl()).isEqualTo("jdbc:postgresql://db:5432/app");
    }

    @Test
    void unknownOptionsAreRefusedNotIgnored() {
        assertThatThrownBy(() -> DatabaseUrl.parse("postgres://db/app?currentSchema=x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unsupported connection option 'currentSchema'").hasMessageContaining("sslmode");
    }

    @Test
    void badSslModeIsRefused() {
        assertThatThrownBy(() -> DatabaseUrl.parse("postgres://db/app?sslmode=yes"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sslmode must be one of");
    }

    @Test
    void userWithoutPassword() {
        DatabaseUrl url = DatabaseUrl.parse("postgresql://bob@db:5433/shop");
        assertThat(url.user()).isEqualTo("bob");
        assertThat(url.password()).isNull();
        assertThat(url.port()).isEqualTo(5433);
        assertThat(url.database()).isEqualTo("shop");
    }

    @Test
    void emptyPasswordIsKeptAsEmpty() {
        assertThat(DatabaseUrl.parse("postgresql://bob:@db/shop").password()).isEmpty();
    }

    @Test
    void queryParametersOverrideTheAuthority() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://alice:one@db/app?user=bob&password=two");
        assertThat(url.user()).isEqualTo("bob");
        assertThat(url.password()).isEqualTo("two");
        assertThat(url.options()).isEmpty();
    }

    @Test
    void otherOptionsKeepTheirOrderAndDecode() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://db/app?sslmode=require&sslrootcert=x%20y&sslkey&&sslcert=");
        assertThat(url.options()).containsExactly(Map.entry("sslmode", "require"), Map.entry("sslrootcert", "x y"),
                Map.entry("sslkey", ""), Map.entry("sslcert", ""));
    }

    @Test
    void optionsAreImmutable() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://db/app?sslmode=prefer");
        assertThatThrownBy(() -> url.options().put("sslkey", "2")).isInstanceOf(UnsupportedOperationException.class);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "p%40ss%3Aw%2Ford | p@ss:w/ord",
            "%2Bplus%25pct    | +plus%pct",
            "caf%C3%A9        | caf\u00e9",
            "a%20b            | a b",
    })
    void percentEncodedPasswordIsDecoded(String encoded, String expected) {
        DatabaseUrl url = DatabaseUrl.parse("postgres://u:" + encoded + "@db/app");
        assertThat(url.password()).isEqualTo(expected);
        assertThat(url.host()).isEqualTo("db");
    }

    @Test
    void percentEncodedQueryPasswordIsDecoded() {
        assertThat(DatabaseUrl.parse("postgres://db/app?password=p%26q%3Dr").password()).isEqualTo("p&q=r");
    }

    @Test
    void plusInPasswordIsLiteral() {
        assertThat(DatabaseUrl.parse("postgres://u:a+b@db/app").password()).isEqualTo("a+b");
    }

    @Test
    void ipv6Host() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://u@[::1]:6000/app");
        assertThat(url.host()).isEqualTo("[::1]");
        assertThat(url.port()).isEqualTo(6000);
        assertThat(DatabaseUrl.parse(url.jdbcUrl())).extracting(DatabaseUrl::host, DatabaseUrl::port)
                .containsExactly("[::1]", 6000);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "mysql://root:" + SECRET + "@db/app",
            "r2dbc:mysql://root:" + SECRET + "@db/app",
            "http://root:" + SECRET + "@db/app",
            "jdbc:mysql://root:" + SECRET + "@db:3306/app",
            "",
    })
    void foreignSchemesAreRejectedWithoutLeakingThePassword(String text) {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class, () -> DatabaseUrl.parse(text));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("not a PostgreSQL URL");
        assertThat(fullText(e)).doesNotContain(SECRET);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "postgres://alice:" + SECRET + "@/app",
            "postgres://alice:" + SECRET + "@:5432/app",
            "jdbc:postgresql://alice:" + SECRET + "@",
            "r2dbc:postgresql:///app",
    })
    void missingHostIsRejectedWithoutLeakingThePassword(String text) {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class, () -> DatabaseUrl.parse(text));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).containsIgnoringCase("host");
        assertThat(fullText(e)).doesNotContain(SECRET);
    }

    @Test
    void bareSchemeIsRejected() {
        assertThatThrownBy(() -> DatabaseUrl.parse("postgresql://")).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "postgres://alice:Hunter2/secret@db/app",
            "postgres://alice:Hunter2@secret@db/app",
            "r2dbc:postgresql:///app?password=Hunter2secret",
            "mysql://db/app?user=root&password=Hunter2secret",
            "postgres:/alice:Hunter2secret@db/app",
            "alice:Hunter2secret@db/app",
    })
    void errorMessagesNeverShowAnyPartOfThePassword(String text) {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class, () -> DatabaseUrl.parse(text));
        assertThat(e).isNotNull();
        assertThat(fullText(e)).doesNotContain("secret");
    }

    @Test
    void malformedUrlDoesNotLeakThePasswordThroughTheCause() {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class,
                () -> DatabaseUrl.parse("postgres://alice:" + SECRET + "@db/my app"));
        assertThat(e).isNotNull();
        assertThat(fullText(e)).doesNotContain(SECRET);
    }

    @Test
    void malformedUrlMessageIsRedacted() {
        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class,
                () -> DatabaseUrl.parse("postgres://alice:" + SECRET + "@db/my app"));
        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("malformed").contains("alice:***@").doesNotContain(SECRET);
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgres://db:0/app", "postgres://db:65536/app", "postgres://alice:" + SECRET + "@db:99999/app"})
    void portOutOfRangeIsRejected(String text) {
        assertThatThrownBy(() -> DatabaseUrl.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("port")
                .satisfies(e -> assertThat(fullText(e)).doesNotContain(SECRET));
    }

    @Test
    void nullIsRejected() {
        assertThatThrownBy(() -> DatabaseUrl.parse(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void renderedForms() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://alice:" + SECRET + "@db.example:6543/app");
        assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example:6543/app");
        assertThat(url.r2dbcUrl()).isEqualTo("r2dbc:postgresql://alice@db.example:6543/app");
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "postgres://alice:" + SECRET + "@db.example:6543/app",
            "postgres://db/app",
            "postgres://al%20ice%40corp:" + SECRET + "@db/my%20db",
            "postgres://u@db/d%2Fslash%3Fq",
            "postgres://%C3%A9l%C3%A8ve@db/caf%C3%A9",
    })
    void renderedFormsRoundTrip(String text) {
        DatabaseUrl url = DatabaseUrl.parse(text);

        DatabaseUrl viaJdbc = DatabaseUrl.parse(url.jdbcUrl());
        assertThat(viaJdbc.host()).isEqualTo(url.host());
        assertThat(viaJdbc.port()).isEqualTo(url.port());
        assertThat(viaJdbc.database()).isEqualTo(url.database());

        DatabaseUrl viaR2dbc = DatabaseUrl.parse(url.r2dbcUrl());
        assertThat(viaR2dbc).isEqualTo(new DatabaseUrl(url.host(), url.port(), url.database(), url.user(), null, Map.of()));
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "postgres://alice:" + SECRET + "@db/app",
            "postgres://db/app?password=" + SECRET,
            "postgres://alice:" + SECRET + "@db/app?password=" + SECRET,
    })
    void renderedFormsAndToStringNeverContainThePassword(String text) {
        DatabaseUrl url = DatabaseUrl.parse(text);
        assertThat(url.password()).isEqualTo(SECRET);
        assertThat(url.toString()).doesNotContain(SECRET).contains("password set");
        assertThat(url.jdbcUrl()).doesNotContain(SECRET);
        assertThat(url.r2dbcUrl()).doesNotContain(SECRET);
    }

    @Test
    void toStringWithoutPasswordSaysNothingAboutOne() {
        assertThat(DatabaseUrl.parse("postgres://db/app").toString()).doesNotContain("password");
    }

    @Test
    void withDatabaseKeepsEverythingElse() {
        DatabaseUrl url = DatabaseUrl.parse("postgres://alice:" + SECRET + "@db:6000/app?sslmode=require");
        DatabaseUrl other = url.withDatabase("other");
        assertThat(other).isEqualTo(new DatabaseUrl("db", 6000, "other", "alice", SECRET, Map.of("sslmode", "require")));
    }

    @Test
    void constructorValidates() {
        assertThatThrownBy(() -> new DatabaseUrl(null, 5432, "d", "u", null, Map.of())).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new DatabaseUrl("h", 5432, null, "u", null, Map.of())).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new DatabaseUrl("h", 5432, "d", null, null, Map.of())).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new DatabaseUrl("h", -1, "d", "u", null, Map.of())).isInstanceOf(IllegalArgumentException.class);
    }
}
