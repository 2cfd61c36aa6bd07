package dev.riffle.admin.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The dashboard's files, read from the classpath once when the routes are built (on the caller's thread, never on an
 * event loop) and served from memory: plain HTML, one script and one style sheet, no build step
 * (docs/adr/0017-admin-http-and-dashboard.md).
 */
final class StaticPage {

    private static final String BASE = "/dev/riffle/admin/static/";

    /** A file: its content type and bytes. */
    record Asset(String type, byte[] bytes) {}

    private final Map<String, Asset> assets;

    private StaticPage(Map<String, Asset> assets) {
        this.assets = assets;
    }

    static StaticPage load() {
        Asset index = read("index.html", "text/html; charset=utf-8");
        return new StaticPage(Map.of("", index, "index.html", index,
                "dashboard.js", read("dashboard.js", "text/javascript; charset=utf-8"),
                "dashboard.css", read("dashboard.css", "text/css; charset=utf-8")));
    }

    /** The file at {@code name} ("" for the page), or null. */
    @Nullable Asset asset(String name) {
        return assets.get(name);
    }

    private static Asset read(String name, String type) {
        try (InputStream in = StaticPage.class.getResourceAsStream(BASE + name)) {
            if (in == null) {
                throw new IllegalStateException("dashboard file missing from the classpath: " + BASE + name);
            }
            return new Asset(type, in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
