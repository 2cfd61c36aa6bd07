package dev.riffle.engine.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.test.Await;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.RiffleTestKit;
import dev.riffle.engine.test.TestDatabase;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The engine's meters in a real registry over a started engine: a drain with a retry and a failure shows up in the
 * outcome counters, timers and summaries with their queue and kind tags; the cached gauges show one refresh's counts;
 * every registered meter is named in {@link RiffleMeter} with its type and tags, and every {@link RiffleMeter} is
 * registered; a Prometheus scrape shows them.
 */
@RiffleTest
class MetersIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final String Q = "metered";
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    @Test
    void aDrainWithARetryAndAFailureIsMeteredAndEveryMeterIsTheEnums(TestDatabase db) {
        Riffle riffle = RiffleTestKit.startEngine(db, c -> c.meterRegistry(registry).meterRefreshInterval(Duration.ZERO));
        try {
            RiffleTestKit kit = RiffleTestKit.of(riffle);
            List<NewJob> jobs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                jobs.add(NewJob.builder("ok").queue(Q).args("{}").build());
            }
            jobs.add(NewJob.builder("flaky").queue(Q).args("{}").maxAttempts(3).build());
            jobs.add(NewJob.builder("doomed").queue(Q).args("{}").build());
            kit.enqueueMany(jobs).block(TIMEOUT);
            Map<String, JobHandler> handlers = Map.of(
                    "ok", job -> Mono.just(JobOutcome.complete()),
                    "flaky", job -> Mono.just(job.attempt() == 1 ? JobOutcome.retry("once", Duration.ZERO)
                            : JobOutcome.complete()),
                    "doomed", job -> Mono.just(JobOutcome.fail("never")));
            // Handlers run in the background until all six outcomes are counted; the leader promotes the retry.
            kit.runInBackground(handlers, Q);
            Await.until("six outcomes counted", TIMEOUT, () -> registry.find("riffle.job.outcomes").counters().stream()
                    .mapToDouble(c -> c.count()).sum() >= 6);
            kit.stopBackground();

            // Outcomes by queue, kind and outcome, counted once each.
            assertThat(outcome("ok", "completed")).isEqualTo(3);
            assertThat(outcome("flaky", "retried")).isEqualTo(1);
            assertThat(outcome("flaky", "completed")).isEqualTo(1);
            assertThat(outcome("doomed", "failed")).isEqualTo(1);
            assertThat(registry.find("riffle.job.outcomes").counters()).hasSize(4);

            // Pickup on first attempts only; handler time per run; end-to-end per success.
            assertThat(timerCount(registry, "riffle.job.pickup", "ok")).isEqualTo(3);
            assertThat(timerCount(registry, "riffle.job.pickup", "flaky")).isEqualTo(1);
            assertThat(timerCount(registry, "riffle.job.handler", "flaky")).isEqualTo(2);
            assertThat(timerCount(registry, "riffle.job.handler", "doomed")).isEqualTo(1);
            assertThat(timerCount(registry, "riffle.job.latency", "ok")).isEqualTo(3);
            assertThat(timerCount(registry, "riffle.job.latency", "flaky")).isEqualTo(1);
            assertThat(registry.find("riffle.job.latency").tag("kind", "doomed").timer()).isNull();

            // Claims and flushes: the summaries add up to the stats counters.
            var stats = riffle.stats();
            assertThat(registry.get("riffle.claim.batch.size").summary().totalAmount()).isEqualTo(stats.claimedJobs());
            assertThat(registry.get("riffle.claim.batch.size").summary().count()).isEqualTo(stats.claimBatches());
            // (an empty claim cancelled by stopBackground counted in stats may not have finished its round trip)
            assertThat(registry.get("riffle.claim.duration").timer().count())
                    .isBetween(stats.claimBatches(), stats.claimBatches() + stats.emptyClaims());
            assertThat(registry.get("riffle.complete.flush.size").summary().totalAmount())
                    .isEqualTo(stats.completed() + stats.closed() + stats.rejected()).isEqualTo(6);
            assertThat(registry.get("riffle.complete.flush.duration").timer().count())
                    .isEqualTo(stats.completionBatches());

            // Cached gauges: two ready, one deferred, one in the DLQ after one refresh, never before.
            kit.enqueueMany(List.of(NewJob.builder("ok").queue(Q).args("{}").build(),
                    NewJob.builder("ok").queue(Q).args("{}").build(),
                    NewJob.builder("ok").queue(Q).args("{}").runAt(Instant.now().plusSeconds(3600)).build()))
                    .block(TIMEOUT);
            assertThat(registry.find("riffle.queue.available").gauge()).isNull();
            riffle.refreshMeters().block(TIMEOUT);
            assertThat(gauge(registry, "riffle.queue.available")).isEqualTo(2);
            assertThat(gauge(registry, "riffle.queue.running")).isEqualTo(0);
            assertThat(gauge(registry, "riffle.queue.deferred")).isEqualTo(1);
            assertThat(gauge(registry, "riffle.queue.dlq")).isEqualTo(1);
            assertThat(gauge(registry, "riffle.queue.oldest_available_age")).isBetween(0.0, 60.0);
            assertThat(registry.find("riffle.table.dead_tuples").tag("table", "ready_entries").gauge()).isNotNull();

            // Ring operations by ring, action and outcome.
            var rotated = riffle.maintenance().rotateNow(Ring.CLAIM).block(TIMEOUT);
            var pruned = riffle.maintenance().pruneNow(Ring.CLAIM).block(TIMEOUT);
            assertThat(registry.get("riffle.ring.operations").tags("ring", "claim", "action", "rotate",
                    "outcome", rotated.name().toLowerCase()).counter().count()).isGreaterThanOrEqualTo(1);
            assertThat(registry.get("riffle.ring.operations").tags("ring", "claim", "action", "prune",
                    "outcome", pruned.name().toLowerCase()).counter().count()).isGreaterThanOrEqualTo(1);

            // Completeness: the registry holds exactly the enum's meters, each with its type and tag keys.
            List<Meter> ours = registry.getMeters().stream()
                    .filter(m -> db.schema().equals(m.getId().getTag(RiffleMeter.SCHEMA_TAG))).toList();
            Set<String> registered = ours.stream().map(m -> m.getId().getName()).collect(Collectors.toCollection(TreeSet::new));
            Set<String> named = Arrays.stream(RiffleMeter.values()).map(RiffleMeter::meterName)
                    .collect(Collectors.toCollection(TreeSet::new));
            assertThat(registered).isEqualTo(named);
            for (Meter m : ours) {
                RiffleMeter spec = Arrays.stream(RiffleMeter.values())
                        .filter(r -> r.meterName().equals(m.getId().getName())).findFirst().orElseThrow();
                assertThat(m.getId().getTags().stream().map(Tag::getKey).collect(Collectors.toSet()))
                        .as(spec.name()).isEqualTo(Set.copyOf(spec.allTags()));
                assertThat(m.getId().getType().name()).as(spec.name()).isEqualTo(switch (spec.type()) {
                    case COUNTER -> "COUNTER";
                    case GAUGE -> "GAUGE";
                    case TIMER -> "TIMER";
                    case SUMMARY -> "DISTRIBUTION_SUMMARY";
                });
                assertThat(m.getId().getDescription()).as(spec.name()).isEqualTo(spec.description());
            }

            // A Prometheus scrape shows them.
            String scrape = registry.scrape();
            String schema = "schema=\"" + db.schema() + "\"";
            assertThat(scrape).containsPattern("riffle_job_outcomes_jobs_total\\{kind=\"doomed\",outcome=\"failed\","
                    + "queue=\"metered\"," + schema + "\\} 1\\.0");
            assertThat(scrape).containsPattern("riffle_queue_available_jobs\\{queue=\"metered\"," + schema + "\\} 2\\.0");
            assertThat(scrape).containsPattern("riffle_job_latency_seconds_count\\{kind=\"ok\",queue=\"metered\","
                    + schema + "\\} 3");
            assertThat(scrape).contains("riffle_claim_duration_seconds_count{" + schema + "}");
        } finally {
            riffle.close().block(TIMEOUT);
        }
        // Closing the engine takes its meters out of the application's registry.
        assertThat(registry.getMeters()).noneMatch(m -> db.schema().equals(m.getId().getTag(RiffleMeter.SCHEMA_TAG)));
    }

    @Test
    void theCachedGaugesRefreshThemselvesEveryInterval(TestDatabase db) {
        Riffle riffle = RiffleTestKit.startEngine(db, c -> c.meterRegistry(registry)
                .meterRefreshInterval(Duration.ofMillis(100)));
        try {
            riffle.subscribe("watched"); // assembling a subscription is enough for the engine to report the queue
            riffle.client().enqueue(NewJob.builder("ok").queue("watched").args("{}").build()).block(TIMEOUT);
            Await.until("the refresh loop reports the ready job", TIMEOUT, () -> {
                var g = registry.find("riffle.queue.available").tag("queue", "watched").gauge();
                return g != null && g.value() == 1;
            });
            assertThat(registry.find("riffle.queue.available").tag("queue", Q).gauge())
                    .as("a queue this engine never subscribed to is not reported").isNull();
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }

    @Test
    void aListenReconnectIsCounted(TestDatabase db) {
        Riffle riffle = RiffleTestKit.startEngine(db, c -> c.meterRegistry(registry).applicationName("meters-listen"));
        try {
            assertThat(registry.get("riffle.listener.reconnects").counter().count()).isZero();
            long killed = db.queryLong("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    + "WHERE application_name LIKE 'meters-listen%' AND query LIKE 'LISTEN%'");
            assertThat(killed).isEqualTo(1);
            Await.until("the listener reconnected and was counted", TIMEOUT,
                    () -> registry.get("riffle.listener.reconnects").counter().count() == 1
                            && registry.get("riffle.listener.up").gauge().value() == 1);
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }

    private static double gauge(PrometheusMeterRegistry registry, String name) {
        return registry.get(name).tag("queue", Q).gauge().value();
    }

    private static long timerCount(PrometheusMeterRegistry registry, String name, String kind) {
        return registry.get(name).tags("queue", Q, "kind", kind).timer().count();
    }

    private double outcome(String kind, String outcome) {
        return registry.get("riffle.job.outcomes").tags("queue", Q, "kind", kind, "outcome", outcome).counter().count();
    }
}
