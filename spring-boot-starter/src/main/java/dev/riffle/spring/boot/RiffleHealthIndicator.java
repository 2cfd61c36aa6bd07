package dev.riffle.spring.boot;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleStats;
import java.time.Duration;
import java.util.Objects;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import reactor.core.publisher.Mono;

/**
 * The engine's readiness, as the {@code riffle} health contributor: {@code UP} when the schema is migrated and checked
 * (the engine started), the LISTEN connection is up and a maintenance leader is known (this process or another
 * holds the schema's leader lock); {@code OUT_OF_SERVICE} while the listener or the leader is missing (jobs still run:
 * claims poll without LISTEN, but scheduled jobs wait for a leader); {@code DOWN} once the engine is closed.
 *
 * <p>Details: {@code schema}, {@code migrated}, {@code listening}, {@code leader} (this process),
 * {@code leaderKnown}, {@code inFlight}. Add it to the readiness group with
 * {@code management.endpoint.health.group.readiness.include=readinessState,riffle}.
 */
public final class RiffleHealthIndicator implements ReactiveHealthIndicator {

    /** How long the leader look-up may take before the leader counts as unknown. */
    static final Duration LEADER_LOOKUP_TIMEOUT = Duration.ofSeconds(5);

    private final Riffle riffle;

    /** Reports on {@code riffle}. */
    public RiffleHealthIndicator(Riffle riffle) {
        this.riffle = Objects.requireNonNull(riffle, "riffle");
    }

    @Override
    public Mono<Health> health() {
        String schema = riffle.config().schema();
        if (riffle.isDisposed()) {
            return Mono.just(Health.down().withDetail("schema", schema).withDetail("closed", true).build());
        }
        RiffleStats stats = riffle.stats();
        return riffle.maintenance().leaderPresent()
                .timeout(LEADER_LOOKUP_TIMEOUT)
                .map(known -> health(schema, stats, known, null))
                .onErrorResume(e -> Mono.just(health(schema, stats, false, e)));
    }

    private static Health health(String schema, RiffleStats stats, boolean leaderKnown, @org.jspecify.annotations.Nullable Throwable error) {
        boolean ready = stats.listening() && leaderKnown;
        Health.Builder b = ready ? Health.up() : Health.outOfService();
        b.withDetail("schema", schema)
                .withDetail("migrated", true)
                .withDetail("listening", stats.listening())
                .withDetail("leader", stats.leader())
                .withDetail("leaderKnown", leaderKnown)
                .withDetail("inFlight", stats.inFlight());
        if (error != null) {
            b.withDetail("leaderLookupError", String.valueOf(error));
        }
        return b.build();
    }
}
