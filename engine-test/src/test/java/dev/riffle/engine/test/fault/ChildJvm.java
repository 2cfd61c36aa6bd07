package dev.riffle.engine.test.fault;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A separate JVM running a {@code main} class from this JVM's classpath, which a test can SIGKILL (RELIABILITY.md
 * §3.2). It starts as {@code java -cp <this classpath> -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 <main> <args>},
 * small and quick to boot on a 2-core machine.
 *
 * <p>Both output streams are read all the time by daemon threads into line buffers: a child whose pipe fills up
 * stalls in {@code write} and looks exactly like a hung worker. Synchronize on durable database state where you
 * can, and use {@link #awaitLine} for the child's own milestones ({@code READY}).
 *
 * <p>The child's stdin stays open until {@link #kill()} or {@link #close()}; a child that watches it (as
 * {@link ChaosWorkerMain} does) exits by itself when this JVM dies without cleaning up. Methods block; call them
 * from the test thread.
 */
public final class ChildJvm implements AutoCloseable {

    /** JVM options every child gets, before any extra ones. */
    public static final List<String> DEFAULT_JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

    private static final int MAX_BUFFERED_LINES = 200_000;
    private static final Duration KILL_WAIT = Duration.ofSeconds(15);

    private final Process process;
    private final String description;
    private final LineBuffer stdout = new LineBuffer();
    private final LineBuffer stderr = new LineBuffer();
    private final Thread stdoutReader;
    private final Thread stderrReader;
    private final Thread shutdownHook;

    private ChildJvm(Process process, String description) {
        this.process = process;
        this.description = description;
        this.stdoutReader = drain(process.getInputStream(), stdout, "stdout");
        this.stderrReader = drain(process.getErrorStream(), stderr, "stderr");
        // A test JVM that exits abnormally must not leave workers behind that keep claiming from the database.
        this.shutdownHook = new Thread(() -> {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }, "riffle-child-jvm-reaper-" + process.pid());
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** Launches {@code mainClass} with {@code args} and the {@link #DEFAULT_JVM_OPTIONS}. */
    public static ChildJvm launch(Class<?> mainClass, List<String> args) {
        return launch(mainClass, List.of(), args);
    }

    /**
     * Launches {@code mainClass} with {@code args}; {@code extraJvmOptions} come after the defaults, so they win
     * where the JVM takes the last occurrence (e.g. a larger {@code -Xmx}).
     */
    public static ChildJvm launch(Class<?> mainClass, List<String> extraJvmOptions, List<String> args) {
        Objects.requireNonNull(mainClass, "mainClass");
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.addAll(DEFAULT_JVM_OPTIONS);
        cmd.addAll(extraJvmOptions);
        cmd.add(mainClass.getName());
        cmd.addAll(args);
        try {
            Process p = new ProcessBuilder(cmd).redirectInput(ProcessBuilder.Redirect.PIPE).start();
            return new ChildJvm(p, mainClass.getSimpleName() + " " + String.join(" ", args));
        } catch (IOException e) {
            throw new IllegalStateException("cannot launch a child JVM for " + mainClass.getName(), e);
        }
    }

    /** The child's operating-system process id. */
    public long pid() {
        return process.pid();
    }

    /** Whether the child process is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** The exit code once it ended (137 after {@link #kill()}: 128 + SIGKILL), or empty while it runs. */
    public Optional<Integer> exitCode() {
        return process.isAlive() ? Optional.empty() : Optional.of(process.exitValue());
    }

    /**
     * Waits until a stdout line (one already printed, or a later one) matches, and returns the first such line.
     *
     * @throws IllegalStateException when the timeout passes or the child exits first; the message carries the
     *     recent output of both streams
     */
    public String awaitLine(Predicate<String> predicate, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int from = 0;
        while (true) {
            LineBuffer.Scan scan = stdout.scan(from, predicate);
            if (scan.match() != null) {
                return scan.match();
            }
            from = scan.next();
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IllegalStateException("no matching line from " + description + " within " + timeout + diagnostics());
            }
            if (!process.isAlive() && !stdoutReader.isAlive() && stdout.size() <= from) {
                throw new IllegalStateException(description + " exited (code " + process.exitValue()
                        + ") without printing a matching line" + diagnostics());
            }
            stdout.awaitMore(from, Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
        }
    }

    /** Stdout lines so far (the oldest are dropped beyond {@value #MAX_BUFFERED_LINES}). */
    public List<String> stdoutLines() {
        return stdout.snapshot();
    }

    /** Stderr lines so far. */
    public List<String> stderrLines() {
        return stderr.snapshot();
    }

    /**
     * SIGKILL ({@code Process.destroyForcibly()} on Linux) to the child and its descendants, then waits until it
     * is gone. The child gets no chance to flush, close connections or run shutdown hooks: its database sessions
     * die with their sockets.
     *
     * @throws IllegalStateException when the process is still alive after 15 s
     */
    public void kill() {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
        awaitExit(KILL_WAIT);
    }

    /**
     * Waits for the child to exit by itself and returns its exit code.
     *
     * @throws IllegalStateException when it is still running after {@code timeout}
     */
    public int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(description + " (pid " + pid() + ") still alive after " + timeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + description, e);
        }
        joinReaders();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException shuttingDown) {
            // The hook is running already; it has nothing left to kill.
        }
        return process.exitValue();
    }

    /** Kills the child if it still runs; idempotent. */
    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        } else {
            awaitExit(KILL_WAIT);
        }
    }

    @Override
    public String toString() {
        return "ChildJvm[pid " + pid() + ", " + description + (isAlive() ? "" : ", exited " + process.exitValue()) + "]";
    }

    private void joinReaders() {
        try {
            // The pipes reach end-of-file once the process is gone; a grandchild still holding them must not hang us.
            stdoutReader.join(2_000);
            stderrReader.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private String diagnostics() {
        return "\n--- stdout (last 30) ---\n" + String.join("\n", stdout.tail(30))
                + "\n--- stderr (last 30) ---\n" + String.join("\n", stderr.tail(30));
    }

    private Thread drain(InputStream in, LineBuffer into, String name) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    into.add(line);
                }
            } catch (IOException e) {
                // The stream closes when the process dies; nothing is left to read.
            } finally {
                into.close();
            }
        }, "riffle-child-" + process.pid() + "-" + name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static String javaExecutable() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Lines with absolute indexes, so a scan can continue where it left off even after old lines were dropped. */
    private static final class LineBuffer {
        private final List<String> lines = new ArrayList<>();
        private int dropped;
        private boolean closed;

        record Scan(String match, int next) {}

        synchronized void add(String line) {
            lines.add(line);
            if (lines.size() > MAX_BUFFERED_LINES) {
                int cut = lines.size() / 2;
                lines.subList(0, cut).clear();
                dropped += cut;
            }
            notifyAll();
        }

        synchronized void close() {
            closed = true;
            notifyAll();
        }

        synchronized int size() {
            return dropped + lines.size();
        }

        synchronized Scan scan(int from, Predicate<String> predicate) {
            int i = Math.max(from, dropped);
            for (; i < dropped + lines.size(); i++) {
                String line = lines.get(i - dropped);
                if (predicate.test(line)) {
                    return new Scan(line, i + 1);
                }
            }
            return new Scan(null, i);
        }

        synchronized void awaitMore(int from, long nanos) {
            if (closed || dropped + lines.size() > from) {
                return;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, nanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        synchronized List<String> snapshot() {
            return List.copyOf(lines);
        }

        synchronized List<String> tail(int n) {
            return List.copyOf(lines.subList(Math.max(0, lines.size() - n), lines.size()));
        }
    }
}
