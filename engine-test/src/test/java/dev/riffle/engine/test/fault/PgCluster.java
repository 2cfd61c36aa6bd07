package dev.riffle.engine.test.fault;

import dev.riffle.engine.test.PostgresInstall;
import dev.riffle.engine.DatabaseUrl;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A PostgreSQL cluster that one test (class) owns outright, so it may restart, crash or starve it without
 * disturbing anyone else (RELIABILITY.md §3.1). It runs the distribution's binaries from
 * {@code /usr/lib/postgresql/<major>/bin} (the newest major found, or the directory named by the
 * {@code RIFFLE_PG_BIN} environment variable), listens on 127.0.0.1 only, on a free port, and trusts every login.
 *
 * <p>PostgreSQL refuses to run as root, so when this JVM is root {@code initdb} and {@code pg_ctl} run through
 * {@code runuser -u postgres} (or {@code nobody} when there is no {@code postgres} user) in a temporary directory
 * chowned to that user.
 *
 * <p>Settings suit fault tests: {@code fsync=off} (the OS survives a server crash, so committed data does too)
 * with {@code synchronous_commit=on} (a commit acknowledged to the client is in the WAL before the
 * acknowledgement, which is what makes "committed" mean something after {@link #crash()}), plus
 * {@code max_connections=200}, {@code autovacuum_naptime=1s}, {@code deadlock_timeout=200ms},
 * {@code log_lock_waits=on} and a log line prefix carrying the SQLSTATE. Add or override settings with
 * {@link #setting(String, String)} before {@link #start()}.
 *
 * <p>Use it directly ({@code try (PgCluster pg = PgCluster.create().start()) {...}}) or as a class-level extension
 * ({@code @RegisterExtension static final PgCluster PG = PgCluster.create();}), which starts it before the first
 * test and closes it after the last. A JVM shutdown hook stops the server and deletes its directory if nobody
 * closed it. Every method blocks; call them from the test thread.
 */
public final class PgCluster implements AutoCloseable, BeforeAllCallback, AfterAllCallback {

    private static final String SUPERUSER = "postgres";
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(90);
    private static final String PG_CTL_WAIT_SECONDS = "60";

    private enum State { NEW, RUNNING, STOPPED, CLOSED }

    private final Map<String, String> settings = new LinkedHashMap<>();
    private State state = State.NEW;
    private @Nullable Path bin;
    private @Nullable String osUser;
    private @Nullable Path dir;
    private int port;
    private @Nullable Thread shutdownHook;

    private PgCluster() {
        settings.put("listen_addresses", "'127.0.0.1'");
        settings.put("fsync", "off");
        settings.put("synchronous_commit", "on");
        settings.put("max_connections", "200");
        settings.put("autovacuum_naptime", "1s");
        settings.put("deadlock_timeout", "200ms");
        settings.put("log_lock_waits", "on");
        settings.put("log_line_prefix", "'%m [%p] %a %e '");
    }

    /** A cluster that is not started yet; nothing touches the disk until {@link #start()}. */
    public static PgCluster create() {
        return new PgCluster();
    }

    /**
     * Sets a server parameter for every start of this cluster; the value is written to the configuration file
     * as is, so quote strings ({@code "'pg_stat_statements'"}).
     *
     * @throws IllegalStateException after the first {@link #start()}
     */
    public synchronized PgCluster setting(String name, String value) {
        if (state != State.NEW) {
            throw new IllegalStateException("settings must be made before the cluster starts");
        }
        if (!name.matches("[a-z_.]+") || value.contains("\n")) {
            throw new IllegalArgumentException("bad setting " + name + " = " + value);
        }
        settings.put(name, value);
        return this;
    }

    /**
     * Starts the server: the first call creates the cluster ({@code initdb}), later calls (after {@link #stop()})
     * start the same data directory on the same port. Returns once the server accepts connections. Idempotent
     * while running.
     */
    public synchronized PgCluster start() {
        switch (state) {
            case RUNNING:
                return this;
            case CLOSED:
                throw new IllegalStateException("cluster is closed");
            case NEW:
                init();
                startFirstTime();
                return this;
            case STOPPED:
            default:
                pgCtl("start", "-w", "-t", PG_CTL_WAIT_SECONDS, "-l", logFile().toString());
                state = State.RUNNING;
                return this;
        }
    }

    /** Stops the server with {@code pg_ctl stop -m fast} (sessions are terminated, data is kept). */
    public synchronized void stop() {
        requireState(State.RUNNING);
        pgCtl("stop", "-m", "fast", "-w", "-t", PG_CTL_WAIT_SECONDS);
        state = State.STOPPED;
    }

    /**
     * {@code pg_ctl restart -m fast}: every session gets {@code FATAL 57P01} and is closed, in-flight transactions
     * roll back, committed work survives, and the server accepts connections again when this returns (S18).
     */
    public synchronized void restartFast() {
        requireState(State.RUNNING);
        pgCtl("restart", "-m", "fast", "-w", "-t", PG_CTL_WAIT_SECONDS, "-l", logFile().toString());
    }

    /**
     * A server crash: {@code pg_ctl stop -m immediate} (no shutdown checkpoint, sessions are cut without a
     * goodbye), then a start, which runs crash recovery from the WAL. Transactions whose commit was acknowledged
     * survive; everything else is gone (S19).
     */
    public synchronized void crash() {
        requireState(State.RUNNING);
        pgCtl("stop", "-m", "immediate", "-w", "-t", PG_CTL_WAIT_SECONDS);
        state = State.STOPPED;
        start();
    }

    /** Where to connect: 127.0.0.1, the cluster's port, database and user {@code postgres}, no password. */
    public DatabaseUrl url() {
        int p;
        synchronized (this) {
            if (state == State.NEW || state == State.CLOSED) {
                throw new IllegalStateException("cluster is " + state.name().toLowerCase());
            }
            p = port;
        }
        return new DatabaseUrl("127.0.0.1", p, "postgres", SUPERUSER, null, Map.of());
    }

    /** The TCP port (fixed for the cluster's life, so URLs stay valid across restarts). */
    public synchronized int port() {
        return port;
    }

    /** The major version of the binaries in use, from their directory name (e.g. 15), or -1 if not numeric. */
    public synchronized int majorVersion() {
        Path b = bin != null ? bin : findBin();
        return PostgresInstall.majorOf(b.getParent().getFileName().toString());
    }

    /** The server log (stderr of the postmaster), for asserting on {@code FATAL} or SQLSTATEs. */
    public synchronized Path logFile() {
        if (dir == null) {
            throw new IllegalStateException("cluster was never started");
        }
        return dir.resolve("server.log");
    }

    /** A position in the server log; pass it to {@link #logSince(long)} to read only what came after. */
    public long logMark() {
        try {
            Path log = logFile();
            return Files.exists(log) ? Files.size(log) : 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The server log written after {@code mark} (from {@link #logMark()}). */
    public String logSince(long mark) {
        Path log = logFile();
        try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
            long len = f.length();
            if (len <= mark) {
                return "";
            }
            byte[] bytes = new byte[(int) Math.min(Integer.MAX_VALUE - 8, len - mark)];
            f.seek(mark);
            f.readFully(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + log, e);
        }
    }

    /** {@link PgFaults#terminate(DatabaseUrl, String)} on this cluster. */
    public int terminate(String applicationNameLike) {
        return PgFaults.terminate(url(), applicationNameLike);
    }

    /** {@link PgFaults#holdXid(DatabaseUrl)} on this cluster: pins the xmin horizon until closed. */
    public PgFaults.Hold holdXid() {
        return PgFaults.holdXid(url());
    }

    /** {@link PgFaults#holdAccessShare(DatabaseUrl, String)} on this cluster. */
    public PgFaults.Hold holdAccessShare(String qualifiedTable) {
        return PgFaults.holdAccessShare(url(), qualifiedTable);
    }

    /** Stops the server (fast) if it runs and deletes its directory. Idempotent. */
    @Override
    public synchronized void close() {
        if (state == State.CLOSED) {
            return;
        }
        State was = state;
        state = State.CLOSED;
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException shuttingDown) {
                // The hook is already running and does the same work.
            }
        }
        try {
            if (was == State.RUNNING) {
                pgCtl("stop", "-m", "fast", "-w", "-t", PG_CTL_WAIT_SECONDS);
            }
        } finally {
            deleteRecursively(dir);
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    @Override
    public synchronized String toString() {
        return "PgCluster[" + state.name().toLowerCase() + (dir == null ? "" : ", 127.0.0.1:" + port + ", " + dir) + "]";
    }

    private void init() {
        bin = findBin();
        osUser = PostgresInstall.isRoot() ? unprivilegedUser() : null;
        try {
            dir = Files.createTempDirectory("riffle-pgcluster-");
            if (osUser != null) {
                UserPrincipal owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(osUser);
                Files.setOwner(dir, owner);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the cluster directory", e);
        }
        // Registered before initdb so a half-built cluster is cleaned up too.
        shutdownHook = new Thread(this::emergencyStop, "riffle-pgcluster-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
        Path data = dir.resolve("data");
        run(List.of(bin.resolve("initdb").toString(), "-D", data.toString(), "-A", "trust", "-U", SUPERUSER,
                "-E", "UTF8", "--locale=C", "--no-sync"));
        try {
            Files.writeString(data.resolve("postgresql.conf"), "\ninclude 'riffle-fault.conf'\n", StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot edit postgresql.conf", e);
        }
    }

    private void startFirstTime() {
        // Another process can take a probed port before the server binds it; a new port fixes that.
        RuntimeException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            port = PostgresInstall.freePort();
            writeConfig();
            try {
                pgCtl("start", "-w", "-t", PG_CTL_WAIT_SECONDS, "-l", logFile().toString());
                state = State.RUNNING;
                return;
            } catch (RuntimeException e) {
                last = e;
            }
        }
        throw last;
    }

    private void writeConfig() {
        StringBuilder conf = new StringBuilder("# written by PgCluster\n");
        conf.append("port = ").append(port).append('\n');
        conf.append("unix_socket_directories = '").append(dir).append("'\n");
        settings.forEach((k, v) -> conf.append(k).append(" = ").append(v).append('\n'));
        Path file = dir.resolve("data").resolve("riffle-fault.conf");
        try {
            Files.writeString(file, conf.toString());
            if (osUser != null) {
                Files.setOwner(file, file.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(osUser));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    private void pgCtl(String action, String... options) {
        List<String> cmd = new ArrayList<>(List.of(bin.resolve("pg_ctl").toString(), action, "-D", dir.resolve("data").toString()));
        cmd.addAll(List.of(options));
        run(cmd);
    }

    private void run(List<String> command) {
        List<String> full = new ArrayList<>();
        if (osUser != null) {
            full.addAll(List.of("runuser", "-u", osUser, "--"));
        }
        full.addAll(command);
        Path out = dir.resolve("command.out");
        // Output goes to a file, not a pipe: the postmaster inherits pg_ctl's descriptors and outlives it, so a
        // pipe would never reach end-of-file.
        ProcessBuilder pb = new ProcessBuilder(full).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(out.toFile());
        try {
            Process p = pb.start();
            if (!p.waitFor(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("timed out after " + COMMAND_TIMEOUT.toSeconds() + " s: " + String.join(" ", full));
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("command failed (exit " + p.exitValue() + "): " + String.join(" ", full)
                        + "\n" + read(out).strip() + logTail());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + full, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running " + full, e);
        }
    }

    private void emergencyStop() {
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            try {
                if (state == State.RUNNING) {
                    // Immediate: the data is disposable and JVM shutdown should not wait for a checkpoint.
                    pgCtl("stop", "-m", "immediate", "-w", "-t", "20");
                }
            } catch (RuntimeException e) {
                System.err.println("riffle: failed to stop " + this + ": " + e);
            } finally {
                state = State.CLOSED;
                deleteRecursively(dir);
            }
        }
    }

    private void requireState(State expected) {
        if (state != expected) {
            throw new IllegalStateException("cluster is " + state.name().toLowerCase() + ", expected "
                    + expected.name().toLowerCase());
        }
    }

    private String logTail() {
        Path log = dir.resolve("server.log");
        if (!Files.isReadable(log)) {
            return "";
        }
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "\n--- " + log + " (tail) ---\n" + String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "";
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    static Path findBin() {
        String override = System.getenv("RIFFLE_PG_BIN");
        if (override != null && !override.isBlank()) {
            Path b = Path.of(override);
            if (Files.isExecutable(b.resolve("initdb")) && Files.isExecutable(b.resolve("pg_ctl"))) {
                return b;
            }
            throw new IllegalStateException("RIFFLE_PG_BIN=" + override + " has no executable initdb and pg_ctl");
        }
        return PostgresInstall.newestPackagedBin().orElseThrow(() -> new IllegalStateException(
                "no PostgreSQL binaries under /usr/lib/postgresql/<major>/bin (install postgresql-<major>, "
                        + "or point RIFFLE_PG_BIN at a bin directory)"));
    }

    private static String unprivilegedUser() {
        for (String candidate : List.of("postgres", "nobody")) {
            if (PostgresInstall.userExists(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("running as root, but there is neither a 'postgres' nor a 'nobody' user to run PostgreSQL as");
    }

    private static void deleteRecursively(@Nullable Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            List<Path> all = new ArrayList<>(paths.toList());
            all.sort(Comparator.reverseOrder());
            for (Path p : all) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            System.err.println("riffle: could not delete " + root + ": " + e);
        }
    }
}
