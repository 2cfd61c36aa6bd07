package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.riffle.migrations.RiffleMigrations;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Starts real servers; the first zonky start extracts ~60 MB of binaries, so allow it some time. */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class EmbeddedPostgresServerTest {

    @Test
    void startsAnswersAndStops() throws Exception {
        EmbeddedPostgresServer server = EmbeddedPostgresServer.start();
        try {
            assertThat(server.url().host()).isEqualTo("127.0.0.1");
            assertThat(selectOne(server)).isEqualTo(1);
        } finally {
            server.close();
        }
        server.close(); // idempotent
        assertThatThrownBy(() -> selectOne(server)).isInstanceOf(SQLException.class);
    }

    @Test
    void runuserFallbackWorksAsRoot() throws Exception {
        // Exercised directly because on a machine where zonky works the fallback would otherwise never run.
        assumeTrue(PostgresInstall.isRoot(), "the runuser fallback is root-only");
        assumeTrue(EmbeddedPostgresServer.findPostgresBin().isPresent(), "no PostgreSQL binaries installed");

        try (EmbeddedPostgresServer server = EmbeddedPostgresServer.startWithRunuser()) {
            assertThat(server.kind()).isEqualTo(EmbeddedPostgresServer.Kind.RUNUSER);
            assertThat(selectOne(server)).isEqualTo(1);
            // Flyway must work against it too, since examples migrate the embedded server.
            RiffleMigrations.Result result = RiffleMigrations.migrate(server.url().jdbcUrl(), server.url().user(), null,
                    RiffleMigrations.Settings.of("riffle"));
            assertThat(result.schema()).isEqualTo("riffle");
        }
    }

    @Test
    void sharedEmbeddedServerIsStartedOnce() throws Exception {
        assertThat(DatabaseLocator.embedded()).isSameAs(DatabaseLocator.embedded());
        try (Connection c = Jdbc.connect(DatabaseLocator.embedded()); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT 1")) {
            assertThat(rs.next()).isTrue();
        }
    }

    private static int selectOne(EmbeddedPostgresServer server) throws SQLException {
        try (Connection c = Jdbc.connect(server.url()); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT 1")) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
