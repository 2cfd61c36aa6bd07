package dev.riffle.engine.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.Comparator;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Facts about the local machine that every self-started PostgreSQL needs (the embedded fallback and the fault
 * suites' own clusters): where the server binaries are, whether we run as root (initdb refuses root), which OS
 * users exist to run the server as, and a free loopback port.
 */
public final class PostgresInstall {

    private PostgresInstall() {}

    /** True when this process runs as uid 0. */
    public static boolean isRoot() {
        try {
            Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
            return uid instanceof Integer i && i == 0;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            // No /proc or no unix attribute view: fall back to the user name.
            return "root".equals(System.getProperty("user.name"));
        }
    }

    /** True when the OS knows a user of that name. */
    public static boolean userExists(String name) {
        try {
            Path.of("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(name);
            return true;
        } catch (UserPrincipalNotFoundException e) {
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    /** The major version a packaged bin directory's parent is named after (e.g. "15"), or -1. */
    public static int majorOf(String name) {
        try {
            return Integer.parseInt(name);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The newest Debian-packaged server ({@code /usr/lib/postgresql/<major>/bin}), if any. */
    public static Optional<Path> newestPackagedBin() {
        return newestBin(Path.of("/usr/lib/postgresql"), "");
    }

    /**
     * The bin directory with the highest major version among the children of {@code root} whose names start with
     * {@code prefix} and that hold executable {@code initdb} and {@code pg_ctl}.
     */
    public static Optional<Path> newestBin(Path root, String prefix) {
        if (!Files.isDirectory(root)) {
            return Optional.empty();
        }
        try (Stream<Path> children = Files.list(root)) {
            return children
                    .filter(p -> p.getFileName().toString().startsWith(prefix))
                    .map(p -> p.resolve("bin"))
                    .filter(b -> Files.isExecutable(b.resolve("initdb")) && Files.isExecutable(b.resolve("pg_ctl")))
                    // Packaged majors are numeric directory names; compare numerically so 9 sorts below 15.
                    .max(Comparator.comparingInt((Path b) -> majorOf(b.getParent().getFileName().toString()))
                            .thenComparing(Path::toString));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** A free TCP port on the loopback interface. */
    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port", e);
        }
    }
}
