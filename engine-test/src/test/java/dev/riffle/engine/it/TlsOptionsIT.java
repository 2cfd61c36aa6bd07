package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The URL's sslmode reaches both connections the engine makes: Flyway's JDBC connection and the R2DBC driver.
 * Proven against the test server, which runs without TLS: {@code require} must fail on both paths, {@code disable}
 * must work. If the option were dropped, {@code require} would connect in plain text.
 */
@RiffleTest
class TlsOptionsIT {

    private static DatabaseUrl with(TestDatabase db, String sslmode) {
        DatabaseUrl u = db.url();
        return new DatabaseUrl(u.host(), u.port(), u.database(), u.user(), u.password(), Map.of("sslmode", sslmode));
    }

    private static String stackTrace(Throwable e) {
        java.io.StringWriter w = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }

    private static boolean serverHasTls(TestDatabase db) {
        return "on".equals(db.queryRows("SHOW ssl").get(0).get("ssl"));
    }

    @Test
    void sslmodeRequireIsHonouredByTheDriverAndByFlyway(TestDatabase db) {
        org.junit.jupiter.api.Assumptions.assumeFalse(serverHasTls(db), "the test server offers TLS");
        assertThatThrownBy(() -> Riffle.start(dev.riffle.engine.RiffleConfig.builder().url(with(db, "require"))
                        .schema(db.schema()).migrate(false).build()).block(Engines.TIMEOUT))
                .as("driver connection with sslmode=require to a server without TLS")
                .hasStackTraceContaining("SSL")
                .satisfies(e -> assertThat(stackTrace(e)).doesNotContain("BlockingOperationError"));
        // Flyway on its own: the engine hands it exactly this JDBC URL.
        DatabaseUrl require = with(db, "require");
        assertThatThrownBy(() -> dev.riffle.migrations.RiffleMigrations.migrate(require.jdbcUrl(), require.user(),
                        require.password() == null ? "" : require.password(), db.settings()))
                .as("Flyway connection with sslmode=require to a server without TLS")
                .hasStackTraceContaining("SSL");

        Riffle plain = Engines.start(db, b -> b.url(with(db, "disable")));
        try {
            assertThat(plain.counts("q").block(Engines.TIMEOUT).available()).isZero();
        } finally {
            Engines.close(plain);
        }
    }
}
