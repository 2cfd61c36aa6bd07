package com.example.greetings;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * What a user's first test looks like: {@code @RiffleTest} gives the class a migrated schema, the test starts an
 * engine on it, enqueues a few jobs and checks that the handler saw each of them, by id, once.
 */
@RiffleTest
class GreetingJobsTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final String QUEUE = "greetings";
    private static final String KIND = "greeting.send";
    private static final int JOBS = 5;

    @Test
    void everyEnqueuedJobIsHandledOnce(TestDatabase db) {
        // The kit migrated db.schema() already; the engine only checks it.
        Riffle riffle = Riffle.start(RiffleConfig.builder()
                        .url(db.url())
                        .schema(db.schema())
                        .migrate(false)
                        .build())
                .block(TIMEOUT);
        try {
            List<Long> ids = new ArrayList<>();
            Map<Long, String> argsById = new ConcurrentHashMap<>();
            for (int i = 0; i < JOBS; i++) {
                String args = "{\"to\":\"user-" + i + "@example.com\"}";
                long id = riffle.client().enqueue(NewJob.builder(KIND).queue(QUEUE).args(args).build()).block(TIMEOUT);
                ids.add(id);
                argsById.put(id, args);
            }

            Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();
            Map<Long, String> argsSeen = new ConcurrentHashMap<>();
            List<JobResult> results = riffle.work(Map.of(KIND, job -> {
                        handled.computeIfAbsent(job.id(), k -> new AtomicInteger()).incrementAndGet();
                        argsSeen.put(job.id(), job.argsJson());
                        return Mono.just(JobOutcome.complete());
                    }), 4, QUEUE)
                    .take(JOBS)
                    .collectList()
                    .block(TIMEOUT);

            assertEquals(JOBS, results.size());
            for (long id : ids) {
                AtomicInteger count = handled.get(id);
                assertEquals(1, count == null ? 0 : count.get(), "times job " + id + " was handled");
                assertEquals(argsById.get(id).replace(" ", ""), argsSeen.get(id).replace(" ", ""), "args of job " + id);
            }
            assertEquals(ids.size(), handled.size(), "jobs handled: " + handled.keySet() + ", enqueued: " + ids);
            for (JobResult r : results) {
                assertTrue(ids.contains(r.jobId()), "result for an enqueued job: " + r);
                assertTrue(r.accepted(), "outcome recorded: " + r);
                assertEquals(JobOutcome.complete(), r.outcome());
            }

            QueueCounts counts = riffle.counts(QUEUE).block(TIMEOUT);
            assertEquals(JOBS, counts.completed(), "completed: " + counts);
            assertEquals(0, counts.available(), "available: " + counts);
            assertEquals(0, counts.inFlight(), "in flight: " + counts);
        } finally {
            riffle.close().block(TIMEOUT);
        }
    }
}
