package dev.riffle.engine.fault;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.test.fault.CompletionOracle;
import dev.riffle.engine.test.fault.PgCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Issue #10 item 5, on a cluster this class owns: one engine runs a {@code work(...)} subscription on one queue and a
 * plain {@code subscribe(...)} on another while a producer enqueues; the server is stopped for 30 s mid-drain and then
 * started again.
 *
 * <p>What it proves: neither subscription ends (an outage is a wait, not an error); the same engine and the same two
 * subscriptions finish every job afterwards, each job with exactly one terminal row, in state {@code completed}, and
 * no attempt left open (rescue, tuned short here, returns attempts whose claim or completion the outage swallowed);
 * and the claim side reports the outage in a few lines, not a stack trace per retry.
 */
// Every wait inside is bounded; this only guards against a hang in code the test does not control.
@Timeout(170)
class OutageIT {

    @RegisterExtension
    static final PgCluster PG = PgCluster.create();

    private static final String SCHEMA = "outage_it";
    private static final String WORK_QUEUE = "outage-work";
    private static final String SUB_QUEUE = "outage-sub";
    private static final int BEFORE = 300;
    private static final int AFTER = 200;
    private static final int BATCH = 10;
    private static final Duration OUTAGE = Duration.ofSeconds(30);

    @Test
    void workAndSubscribeRideOutAThirtySecondOutageAndFinishEveryJobOnce() {
        Fixtures.migrate(PG, SCHEMA);
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        Logger riffleLog = (Logger) LoggerFactory.getLogger("dev.riffle");
        riffleLog.addAppender(logs);
        Riffle riffle = Fixtures.start(PG.url(), SCHEMA, Fixtures.appName("outage"), b -> b
                .maintenance(MaintenanceConfig.builder().rotationInterval(Duration.ofHours(1))
                        // Short enough that attempts the outage stranded come back within the test.
                        .heartbeatInterval(Duration.ofSeconds(1)).staleAfter(Duration.ofSeconds(4))
                        .rescueInterval(Duration.ofSeconds(1)).leaderRetry(Duration.ofSeconds(1))
                        .leaderPing(Duration.ofSeconds(1)).build()));

        Map<Long, AtomicInteger> workAccepted = new ConcurrentHashMap<>();
        AtomicInteger workNotAccepted = new AtomicInteger();
        AtomicReference<String> workEnded = new AtomicReference<>();
        // A handler doing a little asynchronous work, as a real one would.
        JobHandler handler = job -> Mono.delay(Duration.ofMillis(ThreadLocalRandom.current().nextInt(40, 120)))
                .then(Mono.<dev.riffle.engine.api.JobOutcome>empty());
        Disposable work = riffle.work(Map.of("fault.test", handler), 8, WORK_QUEUE)
                .subscribe((JobResult r) -> {
                    if (r.accepted()) {
                        workAccepted.computeIfAbsent(r.jobId(), k -> new AtomicInteger()).incrementAndGet();
                    } else {
                        workNotAccepted.incrementAndGet();
                    }
                }, e -> workEnded.set("error: " + e), () -> workEnded.set("completed"));

        // A subscribe() user who handles a rejected completion (the attempt was rescued meanwhile) and nothing else.
        Map<Long, AtomicInteger> subCompleted = new ConcurrentHashMap<>();
        AtomicInteger subRejected = new AtomicInteger();
        AtomicReference<String> subEnded = new AtomicReference<>();
        Disposable sub = riffle.subscribe(SUB_QUEUE)
                .flatMap(job -> Mono.delay(Duration.ofMillis(ThreadLocalRandom.current().nextInt(40, 120)))
                        .then(job.complete())
                        .doOnSuccess(v -> subCompleted.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet())
                        .onErrorResume(AttemptRejectedException.class, e -> {
                            subRejected.incrementAndGet();
                            return Mono.empty();
                        }), 8, 1)
                .subscribe(v -> {}, e -> subEnded.set("error: " + e), () -> subEnded.set("completed"));

        List<Long> workIds = new ArrayList<>();
        List<Long> subIds = new ArrayList<>();
        long t0 = System.nanoTime();
        try {
            // Load: enqueue faster than the handlers drain, so the outage meets a backlog, running handlers and
            // completions waiting to be flushed.
            produce(riffle, workIds, subIds, 0, BEFORE);
            long doneBefore = workAccepted.size() + subCompleted.size();
            long stop0 = System.nanoTime();
            PG.stop();
            Fixtures.sleep(OUTAGE.toMillis());
            PG.start();
            long outageMillis = (System.nanoTime() - stop0) / 1_000_000;
            assertThat(workEnded.get()).as("work(...) subscription during the outage").isNull();
            assertThat(subEnded.get()).as("subscribe(...) Flux during the outage").isNull();

            produce(riffle, workIds, subIds, BEFORE, AFTER);
            CompletionOracle.Report workReport = CompletionOracle.awaitDrained(PG.url(), SCHEMA, WORK_QUEUE, workIds,
                    workIds.size(), Duration.ofSeconds(40));
            CompletionOracle.Report subReport = CompletionOracle.awaitDrained(PG.url(), SCHEMA, SUB_QUEUE, subIds,
                    subIds.size(), Duration.ofSeconds(20));

            Map<String, Long> warnings = logs.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                    .collect(Collectors.groupingBy(ILoggingEvent::getLoggerName, TreeMap::new, Collectors.counting()));
            System.out.printf("OutageIT: %d jobs done before a %d ms outage; drained in %s; work: %d accepted, %d not "
                            + "accepted; subscribe: %d completed, %d rejected; WARN+ lines by logger %s%n", doneBefore,
                    outageMillis, Fixtures.seconds(t0), workAccepted.size(), workNotAccepted.get(), subCompleted.size(),
                    subRejected.get(), warnings);

            assertThat(workEnded.get()).as("work(...) subscription").isNull();
            assertThat(subEnded.get()).as("subscribe(...) Flux").isNull();
            assertThat(doneBefore).as("the outage met a drain under way").isPositive();
            assertThat(workReport.notTerminal()).as("work queue:%n%s", workReport.describe()).isEmpty();
            assertThat(subReport.notTerminal()).as("subscribe queue:%n%s", subReport.describe()).isEmpty();
            workReport.assertExactlyOnce();
            subReport.assertExactlyOnce();
            assertThat(workReport.committed()).containsAll(workIds);
            assertThat(subReport.committed()).containsAll(subIds);
            assertCompletedOnce(WORK_QUEUE, workIds);
            assertCompletedOnce(SUB_QUEUE, subIds);
            // Not asserted: a flush retried through the outage whose attempt was rescued meanwhile finds it closed
            // and reports success (the batcher's in-doubt rule cannot tell its own commit from rescue's), so a job can
            // look accepted by two attempts in process while the database holds one completion. Printed only.
            System.out.printf("OutageIT: jobs acknowledged to two attempts in process: work %s, subscribe %s%n",
                    twice(workAccepted), twice(subCompleted));

            // The claim side and the worker facade say when the outage starts and when it ends; the flush retry
            // (dev.riffle.engine.complete) is another component's and is not judged here.
            List<ILoggingEvent> claimSide = logs.list.stream()
                    .filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                    .filter(e -> e.getLoggerName().equals("dev.riffle.engine.claim")
                            || e.getLoggerName().equals("dev.riffle.engine.work")
                            || e.getLoggerName().equals("dev.riffle.engine.notify")
                            || e.getLoggerName().equals("dev.riffle.engine.maintenance"))
                    .toList();
            assertThat(claimSide).as("claim, worker, listener and maintenance warnings: %s",
                    claimSide.stream().map(ILoggingEvent::getFormattedMessage).toList()).hasSizeLessThanOrEqualTo(16);
            assertThat(claimSide).as("stack traces").allMatch(e -> e.getThrowableProxy() == null);
        } finally {
            work.dispose();
            sub.dispose();
            riffleLog.detachAppender(logs);
            Fixtures.close(riffle);
        }
    }

    /** Enqueues {@code n} jobs per queue in batches of {@value #BATCH}, a batch of each every 50 ms. */
    private static void produce(Riffle riffle, List<Long> workIds, List<Long> subIds, int from, int n) {
        AtomicInteger failures = new AtomicInteger();
        for (int i = from; i < from + n; i += BATCH) {
            workIds.addAll(enqueue(riffle, WORK_QUEUE, i, failures));
            subIds.addAll(enqueue(riffle, SUB_QUEUE, i, failures));
            Fixtures.sleep(50);
        }
    }

    /**
     * One batch, retried while the pool still hands out connections that died with the server; a failed call may
     * have committed, which the oracle (reading what is in the database) accounts for.
     */
    private static List<Long> enqueue(Riffle riffle, String queue, int from, AtomicInteger failures) {
        RuntimeException last = null;
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                return riffle.client().enqueueMany(Fixtures.jobs(queue, from, BATCH)).block(Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                last = e;
                failures.incrementAndGet();
                Fixtures.sleep(200);
            }
        }
        throw last;
    }

    private static List<Long> twice(Map<Long, AtomicInteger> counts) {
        return counts.entrySet().stream().filter(e -> e.getValue().get() > 1).map(Map.Entry::getKey).sorted().toList();
    }

    private static void assertCompletedOnce(String queue, List<Long> ids) {
        List<Map<String, Object>> rows = Sql.queryRows(PG.url(), SCHEMA,
                "SELECT job_id, state::text AS state FROM terminal_jobs WHERE queue = ?", queue);
        Map<Long, List<String>> states = new TreeMap<>();
        for (Map<String, Object> r : rows) {
            states.computeIfAbsent(((Number) r.get("job_id")).longValue(), k -> new ArrayList<>()).add((String) r.get("state"));
        }
        Set<Long> missing = ids.stream().filter(id -> !states.containsKey(id)).collect(Collectors.toSet());
        assertThat(missing).as("%s: enqueued ids without a terminal row", queue).isEmpty();
        Queue<String> wrong = new ConcurrentLinkedQueue<>();
        states.forEach((id, s) -> {
            if (!s.equals(List.of("completed"))) {
                wrong.add(id + "=" + s);
            }
        });
        assertThat(wrong).as("%s: jobs whose terminal record is not exactly one 'completed'", queue).isEmpty();
    }
}
