package dev.riffle.engine.outcomes;

import static dev.riffle.engine.outcomes.OutcomeKit.TIMEOUT;
import static dev.riffle.engine.outcomes.OutcomeKit.await;
import static dev.riffle.engine.outcomes.OutcomeKit.claimsOf;
import static dev.riffle.engine.outcomes.OutcomeKit.closuresOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.test.RiffleTest;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Under {@code work(...)} a handler's slot is free once its outcome is queued, not once it is durable, and the
 * outcomes waiting for durability are bounded by {@code workPendingOutcomes} (docs/design/delivery-contract.md#handler-slots-and-durability).
 * The first outcome is held back from durability by holding its attempt lock, which every closer takes first.
 */
@RiffleTest
class WorkSlotsIT extends ProbeIT {

    @Test
    void aSlotIsFreeBeforeTheOutcomeIsDurableAndPendingOutcomesAreBounded() throws Exception {
        // One shard keeps the queue FIFO, so the first job claimed is the first enqueued; no prefetch, so what is
        // claimed is what handlers asked for.
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("wa").withEnqueueShards(1))
                .workPrefetch(false).workPendingOutcomes(1));
        Disposable work = null;
        try (Connection holder = database.openJdbc()) {
            List<Long> ids = riffle.client().enqueueMany(List.of(NewJob.builder("k").queue("wa").build(),
                    NewJob.builder("k").queue("wa").build(), NewJob.builder("k").queue("wa").build(),
                    NewJob.builder("k").queue("wa").build())).block(TIMEOUT);
            long first = ids.get(0);
            OutcomeKit.holdAttemptLock(holder, first, 1);

            List<Long> handled = new CopyOnWriteArrayList<>();
            List<JobResult> results = new CopyOnWriteArrayList<>();
            JobHandler handler = job -> {
                handled.add(job.id());
                return Mono.empty();
            };
            work = riffle.work(Map.of("k", handler), 1, "wa").subscribe(results::add);

            // One handler slot: the second job runs while the first job's outcome cannot become durable.
            await("the second job handled while the first outcome waits", () -> handled.size() >= 2);
            assertThat(List.copyOf(handled).subList(0, 2)).containsExactly(first, ids.get(1));
            assertThat(closuresOf(db, first, 1)).as("the first outcome is not durable yet").isZero();
            // The second outcome cannot be queued (one pending outcome at most), so its handler keeps the slot and
            // the third job is not even claimed.
            OutcomeKit.pause(Duration.ofMillis(800));
            assertThat(handled).as("handled while one outcome is pending and one waits to be queued").hasSize(2);
            assertThat(claimsOf(db, ids.get(2))).isZero();
            assertThat(results).isEmpty();

            holder.rollback();
            await("all four outcomes durable", () -> results.size() == 4);
            assertThat(results).allMatch(JobResult::accepted);
            assertThat(handled).containsExactlyElementsOf(ids);
            for (long id : ids) {
                assertThat(claimsOf(db, id)).as("claims of job %d", id).isEqualTo(1);
                assertThat(closuresOf(db, id, 1)).as("closures of job %d", id).isEqualTo(1);
            }
        } finally {
            if (work != null) {
                work.dispose();
            }
            OutcomeKit.close(riffle);
        }
    }

    @Test
    void prefetchClaimsAtLeastTheFloorAheadOfTheHandlersAndNoMore() {
        // Two handlers that never finish: what is claimed is their two jobs plus the prefetch, which is the floor
        // (64), not one window of two. Without the floor this stays at four claimed jobs.
        Riffle riffle = OutcomeKit.start(db, b -> b.queue(QueueConfig.of("wf").withEnqueueShards(1)));
        Disposable work = null;
        try {
            List<NewJob> jobs = new java.util.ArrayList<>();
            for (int i = 0; i < 200; i++) {
                jobs.add(NewJob.builder("k").queue("wf").build());
            }
            long firstId = riffle.client().enqueueMany(jobs).block(TIMEOUT).get(0);
            JobHandler never = job -> Mono.never();
            work = riffle.work(Map.of("k", never), 2, "wf").subscribe();
            long expected = 2 + dev.riffle.engine.RiffleConfig.WORK_PREFETCH_FLOOR;
            // Only this test's jobs: the class shares one schema.
            String claimed = "SELECT count(*) FROM lease_claim_batches b, unnest(b.job_ids) j WHERE j >= ?";
            long[] seen = {-1};
            try {
                await("two running and the floor claimed ahead", () -> (seen[0] = db.queryLong(claimed, firstId)) == expected);
            } catch (AssertionError e) {
                throw new AssertionError("claimed jobs: " + seen[0] + ", expected " + expected, e);
            }
            OutcomeKit.pause(Duration.ofMillis(500));
            assertThat(db.queryLong(claimed, firstId)).as("claimed jobs once the window is full").isEqualTo(expected);
        } finally {
            if (work != null) {
                work.dispose();
            }
            OutcomeKit.close(riffle);
        }
    }
}
