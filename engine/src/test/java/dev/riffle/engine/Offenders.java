package dev.riffle.engine;

import java.sql.Connection;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** Deliberate rule breakers, compiled only into the test classes, that prove the architecture rules bite. */
final class Offenders {
    private Offenders() {}

    static final class Blocker {
        Integer first() {
            return Mono.just(1).block();
        }

        Integer last() {
            return Flux.just(1, 2).blockLast(Duration.ofSeconds(1));
        }
    }

    static final class OwnClock {
        long elapsed(long since) {
            return System.nanoTime() - since;
        }

        java.time.Instant now() {
            return java.time.Instant.now();
        }
    }

    static final class Sleeper {
        void nap() throws InterruptedException {
            Thread.sleep(1);
        }
    }

    static final class JdbcUser {
        boolean closed(Connection c) throws java.sql.SQLException {
            return c.isClosed();
        }
    }

    static final class MeterUser {
        double read(io.micrometer.core.instrument.Counter c) {
            return c.count();
        }
    }

    /** Parses JSON itself instead of going through the one check in the api package. */
    static final class JsonParserUser {
        boolean isObject(String text) {
            try (tools.jackson.core.JsonParser p = tools.jackson.core.json.JsonFactory.builder().build()
                    .createParser(tools.jackson.core.ObjectReadContext.empty(), text)) {
                return p.nextToken() == tools.jackson.core.JsonToken.START_OBJECT;
            }
        }
    }

    /** A public member of the facade package that hands out an internal type. */
    public static final class InternalLeaker {
        public dev.riffle.engine.internal.sql.SqlCatalog catalog() {
            return dev.riffle.engine.internal.sql.SqlCatalog.load("riffle");
        }
    }
}
