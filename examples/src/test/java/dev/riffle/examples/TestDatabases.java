package dev.riffle.examples;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.test.DatabaseLocator;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/** Where the example tests run: the test kit's choice, i.e. the local server on 127.0.0.1:5432 when there is one. */
public final class TestDatabases {

    private TestDatabases() {}

    /**
     * The located database as a URL string the examples accept. The examples take the URL as a parameter so the
     * tests never touch {@value ExampleDatabase#URL_ENV}.
     */
    public static String url() {
        DatabaseUrl url = DatabaseLocator.url();
        // r2dbcUrl() leaves the password out on purpose; carry it as a query parameter, which parse() accepts.
        return url.password() == null
                ? url.r2dbcUrl()
                : url.r2dbcUrl() + "?password=" + URLEncoder.encode(url.password(), StandardCharsets.UTF_8);
    }
}
