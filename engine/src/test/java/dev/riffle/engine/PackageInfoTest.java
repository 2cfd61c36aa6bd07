package dev.riffle.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every package of the engine says what lives there and is {@code @NullMarked}: a package without a
 * {@code package-info.java} silently falls back to unspecified nullness for all its types.
 */
class PackageInfoTest {

    @Test
    void everyPackageHasANullMarkedPackageInfo() throws IOException {
        Path root = Path.of("src/main/java");
        assertThat(root).isDirectory();
        List<Path> packages;
        try (Stream<Path> dirs = Files.walk(root)) {
            packages = dirs.filter(Files::isDirectory).filter(PackageInfoTest::holdsJava).toList();
        }
        assertThat(packages).as("packages found").hasSizeGreaterThan(5);
        for (Path p : packages) {
            Path info = p.resolve("package-info.java");
            assertThat(info).as("package-info of %s", root.relativize(p)).exists();
            String text = Files.readString(info);
            assertThat(text).as("%s", info).contains("@NullMarked").contains("/**");
        }
    }

    private static boolean holdsJava(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.toString().endsWith(".java") && !f.endsWith("package-info.java"));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
