package dev.riffle.engine.it;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import java.time.Duration;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * Runs inside {@link MigrationsOptionalIT}'s class loader, which has no Flyway, pgJDBC or riffle-migrations: starts
 * an engine with migrate(false) on an already migrated schema and runs one job, or tries migrate(true). Reports as
 * a string, so the caller (another class loader) needs no shared types.
 */
public final class NoMigrationsProbe {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private NoMigrationsProbe() {}

    /** Starts with migrate(false), runs one job, closes: {@code handled=<job id>}. Blocking; JUnit thread only. */
    public static String migrateOff(String host, int port, String database, String user, String password,
                                    String schema) {
        DatabaseUrl url = new DatabaseUrl(host, port, database, user, password, Map.of());
        Riffle riffle = Riffle.start(RiffleConfig.builder().url(url).schema(schema).migrate(false).build())
                .block(TIMEOUT);
        long handled;
        try {
            long id = riffle.client().enqueue(NewJob.builder("probe.job").queue("probe").build()).block(TIMEOUT);
            handled = riffle.work(Map.of("probe.job", job -> Mono.just(JobOutcome.complete())), 1, "probe")
                    .filter(r -> r.jobId() == id)
                    .next()
                    .map(r -> r.jobId())
                    .block(TIMEOUT);
        } finally {
            riffle.close().block(TIMEOUT);
        }
        return "handled=" + handled;
    }

    /** Starts with migrate(true): {@code <error class>: <message>}, or {@code started}. Blocking. */
    public static String migrateOn(String host, int port, String database, String user, String password,
                                   String schema) {
        DatabaseUrl url = new DatabaseUrl(host, port, database, user, password, Map.of());
        String migrate;
        try {
            Riffle.start(RiffleConfig.builder().url(url).schema(schema).migrate(true).build()).block(TIMEOUT);
            migrate = "started";
        } catch (RuntimeException e) {
            migrate = e.getClass().getName() + ": " + e.getMessage();
        }
        return migrate;
    }
}
