package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DatabaseLocatorTest {

    @Test
    void findsTheLocalServerWhenNoUrlIsGiven() throws Exception {
        assumeTrue(System.getenv(DatabaseLocator.URL_ENV) == null, DatabaseLocator.URL_ENV + " overrides the lookup");
        assumeTrue(listening(DatabaseLocator.LOCAL_HOST, DatabaseLocator.LOCAL_PORT), "no server on 127.0.0.1:5432");

        LocatedDatabase located = DatabaseLocator.locate();

        assertThat(located.source()).isEqualTo(LocatedDatabase.Source.LOCAL_SERVER);
        assertThat(located.url().host()).isEqualTo("127.0.0.1");
        assertThat(located.url().port()).isEqualTo(5432);
        assertThat(located.description()).contains("127.0.0.1:5432").contains(located.url().database());
        try (Connection c = Jdbc.connect(located.url()); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT current_database(), current_user")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getString(1)).isEqualTo(located.url().database());
            assertThat(rs.getString(2)).isEqualTo(located.url().user());
        }
    }

    @Test
    void locateIsCachedPerJvm() {
        LocatedDatabase first = DatabaseLocator.locate();
        long t0 = System.nanoTime();
        LocatedDatabase second = DatabaseLocator.locate();

        assertThat(second).isSameAs(first);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(50));
        assertThat(DatabaseLocator.url()).isEqualTo(first.url());
    }

    @Test
    void environmentUrlWinsInEveryAcceptedForm() {
        Map<String, String> forms = Map.of(
                "r2dbc:postgresql://alice:s3cret@db.example:6543/jobs", "jobs",
                "postgres://alice:s3cret@db.example:6543/jobs", "jobs",
                "postgresql://alice:s3cret@db.example:6543/jobs?sslmode=require", "jobs",
                "jdbc:postgresql://db.example:6543/jobs?user=alice&password=s3cret", "jobs");
        forms.forEach((raw, database) -> {
            LocatedDatabase located = DatabaseLocator.fromEnvironment(Map.of(DatabaseLocator.URL_ENV, raw)).orElseThrow();
            assertThat(located.source()).isEqualTo(LocatedDatabase.Source.ENVIRONMENT);
            assertThat(located.url().host()).isEqualTo("db.example");
            assertThat(located.url().port()).isEqualTo(6543);
            assertThat(located.url().database()).isEqualTo(database);
            assertThat(located.url().user()).isEqualTo("alice");
            assertThat(located.url().password()).isEqualTo("s3cret");
            // The description lands in logs, so it must never carry the password.
            assertThat(located.description()).contains(DatabaseLocator.URL_ENV).doesNotContain("s3cret");
        });
    }

    @Test
    void unsetOrBlankEnvironmentUrlFallsThrough() {
        assertThat(DatabaseLocator.fromEnvironment(Map.of())).isEmpty();
        assertThat(DatabaseLocator.fromEnvironment(Map.of(DatabaseLocator.URL_ENV, "  "))).isEmpty();
    }

    @Test
    void malformedEnvironmentUrlFailsLoudly() {
        assertThatThrownBy(() -> DatabaseLocator.fromEnvironment(Map.of(DatabaseLocator.URL_ENV, "mysql://x/y")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(DatabaseLocator.URL_ENV);
    }

    @Test
    void localUsersAreTriedPgUserFirst() {
        assertThat(DatabaseLocator.localUserCandidates(Map.of())).containsExactly("postgres", "root");
        assertThat(DatabaseLocator.localUserCandidates(Map.of("PGUSER", "ci"))).containsExactly("ci", "postgres", "root");
        assertThat(DatabaseLocator.localUserCandidates(Map.of("PGUSER", "root"))).containsExactly("root", "postgres");
    }

    @Test
    void nothingListeningMeansEmptyQuickly() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        assertThat(DatabaseLocator.probeLocalServer(Map.of(), "127.0.0.1", port, Duration.ofMillis(300))).isEmpty();

        // Timed warm: a cold JVM spends most of a second initialising logging and socket classes, which says nothing
        // about the probe. What matters is that a refused port never waits for login timeouts (seconds).
        long t0 = System.nanoTime();
        Optional<LocatedDatabase> result =
                DatabaseLocator.probeLocalServer(Map.of(), "127.0.0.1", port, Duration.ofMillis(300));

        assertThat(result).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
    }

    @Test
    void listeningServerThatRejectsEveryLoginIsReported() throws IOException {
        // Something that accepts TCP but is not PostgreSQL: the probe must say so rather than report "nothing there".
        try (ServerSocket fake = new ServerSocket(0)) {
            Thread acceptor = new Thread(() -> {
                while (!fake.isClosed()) {
                    try (Socket s = fake.accept()) {
                        s.getOutputStream().write("not postgres\n".getBytes());
                    } catch (IOException ignored) {
                        return;
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();

            assertThatThrownBy(() -> DatabaseLocator.probeLocalServer(Map.of(), "127.0.0.1", fake.getLocalPort(),
                    Duration.ofMillis(300)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no login worked");
        }
    }

    @Test
    void withoutServerOrDockerItFallsBackToTheSharedEmbeddedServer(@TempDir Path home) throws IOException {
        assumeTrue(!Files.exists(Path.of("/var/run/docker.sock")), "this machine has a Docker socket");
        int unusedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            unusedPort = s.getLocalPort();
        }

        LocatedDatabase located = DatabaseLocator.lookUp(Map.of(), "127.0.0.1", unusedPort, home);

        assertThat(located.source()).isEqualTo(LocatedDatabase.Source.EMBEDDED);
        assertThat(located.url()).isEqualTo(DatabaseLocator.embedded());
        assertThat(located.description()).contains("embedded PostgreSQL");
    }

    @Test
    void dockerHints(@TempDir Path home) throws IOException {
        assumeTrue(!Files.exists(Path.of("/var/run/docker.sock")), "this machine has a Docker socket");

        assertThat(DatabaseLocator.dockerHintPresent(Map.of(), home)).isFalse();
        assertThat(DatabaseLocator.dockerHintPresent(Map.of("DOCKER_HOST", "tcp://127.0.0.1:2375"), home)).isTrue();
        assertThat(DatabaseLocator.dockerHintPresent(Map.of("XDG_RUNTIME_DIR", home.toString()), home)).isFalse();
        Files.createFile(home.resolve("docker.sock"));
        assertThat(DatabaseLocator.dockerHintPresent(Map.of("XDG_RUNTIME_DIR", home.toString()), home)).isTrue();
        Files.createFile(home.resolve(".testcontainers.properties"));
        assertThat(DatabaseLocator.dockerHintPresent(Map.of(), home)).isTrue();
    }

    @Test
    void theLocalProbeIsOnUnlessTurnedOffAndThePropertyWins() {
        assertThat(DatabaseLocator.probeLocal(Map.of(), Map.of())).isTrue();
        assertThat(DatabaseLocator.probeLocal(Map.of(DatabaseLocator.PROBE_LOCAL_ENV, "false"), Map.of())).isFalse();
        assertThat(DatabaseLocator.probeLocal(Map.of(), Map.of(DatabaseLocator.PROBE_LOCAL_PROPERTY, " FALSE "))).isFalse();
        assertThat(DatabaseLocator.probeLocal(Map.of(DatabaseLocator.PROBE_LOCAL_ENV, "false"),
                Map.of(DatabaseLocator.PROBE_LOCAL_PROPERTY, "true"))).isTrue();
        assertThatThrownBy(() -> DatabaseLocator.probeLocal(Map.of(DatabaseLocator.PROBE_LOCAL_ENV, "nope"), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(DatabaseLocator.PROBE_LOCAL_ENV).hasMessageContaining("true or false");
    }

    @Test
    void withTheProbeOffALocalServerIsPassedOver(@TempDir Path home) {
        assumeTrue(listening(DatabaseLocator.LOCAL_HOST, DatabaseLocator.LOCAL_PORT), "no server on 127.0.0.1:5432");
        assumeTrue(!Files.exists(Path.of("/var/run/docker.sock")), "this machine has a Docker socket");
        // The probe on: the local server is taken (what the default lookup does here).
        assertThat(DatabaseLocator.lookUp(Map.of(), Map.of(), DatabaseLocator.LOCAL_HOST, DatabaseLocator.LOCAL_PORT,
                home).source()).isEqualTo(LocatedDatabase.Source.LOCAL_SERVER);

        LocatedDatabase located = DatabaseLocator.lookUp(Map.of(), Map.of(DatabaseLocator.PROBE_LOCAL_PROPERTY, "false"),
                DatabaseLocator.LOCAL_HOST, DatabaseLocator.LOCAL_PORT, home);

        assertThat(located.source()).isEqualTo(LocatedDatabase.Source.EMBEDDED);
        assertThat(located.url().port()).isNotEqualTo(DatabaseLocator.LOCAL_PORT);
    }

    @Test
    void theUrlPropertyWinsOverTheEnvironment(@TempDir Path home) {
        LocatedDatabase located = DatabaseLocator.lookUp(
                Map.of(DatabaseLocator.URL_ENV, "postgres://env@db.example:1111/envdb"),
                Map.of(DatabaseLocator.URL_PROPERTY, "postgres://prop@db.example:2222/propdb"),
                "127.0.0.1", 1, home);

        assertThat(located.source()).isEqualTo(LocatedDatabase.Source.ENVIRONMENT);
        assertThat(located.url().port()).isEqualTo(2222);
        assertThat(located.description()).contains(DatabaseLocator.URL_PROPERTY);
        assertThatThrownBy(() -> DatabaseLocator.fromProperty(Map.of(DatabaseLocator.URL_PROPERTY, "mysql://x/y")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(DatabaseLocator.URL_PROPERTY);
    }

    private static boolean listening(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 300);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
