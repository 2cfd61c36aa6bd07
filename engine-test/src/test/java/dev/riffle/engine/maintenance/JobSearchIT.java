package dev.riffle.engine.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleAdmin;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobInfo;
import dev.riffle.engine.api.JobPage;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueConfig;
import dev.riffle.engine.api.QueueDepth;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code admin().searchJobs} (the dashboard's job list, docs/dashboard.md): newest first by queue, kind and state,
 * each job resolved as {@code admin().job(id)} resolves it, keyset pages that go on past a scan window the state
 * filter emptied; and {@code admin().queueDepths}. One schema and one set of jobs for the class: six jobs in six
 * states in one queue, set up in @BeforeAll.
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JobSearchIT {

    private Riffle riffle;
    private long completed;
    private long retryable;
    private long dead;
    private long scheduled;
    private long availableA;
    private long availableB;
    private long elsewhere;

    @BeforeAll
    void start(TestDatabase db) {
        riffle = Fixtures.manual(db, b -> b.dlqByDefault(false).queue(QueueConfig.of("search.q").withDlq(true)));
        // claimed one at a time, oldest first, so each claim takes the job just enqueued
        completed = enqueue("k.a", "search.q", null);
        Fixtures.claim(riffle, "search.q", 1).get(0).complete().block(Fixtures.TIMEOUT);
        retryable = enqueue("k.a", "search.q", null);
        Fixtures.claim(riffle, "search.q", 1).get(0).retry("later", Duration.ofHours(1)).block(Fixtures.TIMEOUT);
        dead = enqueue("k.b", "search.q", null);
        Fixtures.claim(riffle, "search.q", 1).get(0).fail("boom").block(Fixtures.TIMEOUT);
        scheduled = enqueue("k.a", "search.q", Instant.now().plus(Duration.ofHours(2)));
        availableA = enqueue("k.a", "search.q", null);
        availableB = enqueue("k.b", "search.q", null);
        elsewhere = enqueue("k.a", "search.other", null);
    }

    @AfterAll
    void stop() {
        Fixtures.close(riffle);
    }

    private long enqueue(String kind, String queue, @Nullable Instant runAt) {
        NewJob.Builder b = NewJob.builder(kind).queue(queue);
        if (runAt != null) {
            b.runAt(runAt);
        }
        return riffle.client().enqueue(b.build()).block(Fixtures.TIMEOUT);
    }

    private JobPage search(@Nullable String queue, @Nullable String kind, @Nullable JobState state, long before,
                           int limit) {
        return riffle.admin().searchJobs(queue, kind, state, before, limit).block(Fixtures.TIMEOUT);
    }

    private static List<Long> ids(JobPage page) {
        return page.jobs().stream().map(JobInfo::id).toList();
    }

    @Test
    void aQueueIsListedNewestFirstWithEveryJobsState() {
        JobPage page = search("search.q", null, null, 0, 50);
        assertThat(ids(page)).containsExactly(availableB, availableA, scheduled, dead, retryable, completed);
        Map<Long, JobState> states = page.jobs().stream().collect(Collectors.toMap(JobInfo::id, JobInfo::state));
        assertThat(states).containsEntry(availableB, JobState.AVAILABLE).containsEntry(scheduled, JobState.SCHEDULED)
                .containsEntry(dead, JobState.DLQ).containsEntry(retryable, JobState.RETRYABLE)
                .containsEntry(completed, JobState.COMPLETED);
        assertThat(page.hasMore()).isFalse();
        // a job is what a lookup by id says it is
        assertThat(page.jobs().get(3)).isEqualTo(riffle.admin().job(dead).block(Fixtures.TIMEOUT));
        assertThat(ids(search(null, null, null, 0, 50))).contains(elsewhere, availableB, completed);
    }

    @Test
    void eachStateAndKindFindsItsOwn() {
        assertThat(ids(search("search.q", null, JobState.AVAILABLE, 0, 50))).containsExactly(availableB, availableA);
        assertThat(ids(search("search.q", null, JobState.SCHEDULED, 0, 50))).containsExactly(scheduled);
        assertThat(ids(search("search.q", null, JobState.RETRYABLE, 0, 50))).containsExactly(retryable);
        assertThat(ids(search("search.q", null, JobState.COMPLETED, 0, 50))).containsExactly(completed);
        assertThat(ids(search("search.q", null, JobState.DLQ, 0, 50))).containsExactly(dead);
        assertThat(ids(search(null, null, JobState.DLQ, 0, 50))).containsExactly(dead);
        assertThat(ids(search("search.q", null, JobState.RUNNING, 0, 50))).isEmpty();
        assertThat(ids(search("search.q", "k.b", null, 0, 50))).containsExactly(availableB, dead);
        assertThat(ids(search(null, "k.a", JobState.AVAILABLE, 0, 50))).containsExactly(elsewhere, availableA);
    }

    @Test
    void pagesFollowTheKeysetToTheEnd() {
        JobPage first = search("search.q", null, null, 0, 2);
        assertThat(ids(first)).containsExactly(availableB, availableA);
        assertThat(first.nextBeforeJobId()).isEqualTo(availableA);
        JobPage second = search("search.q", null, null, first.nextBeforeJobId(), 2);
        assertThat(ids(second)).containsExactly(scheduled, dead);
        JobPage third = search("search.q", null, null, second.nextBeforeJobId(), 2);
        assertThat(ids(third)).containsExactly(retryable, completed);
        JobPage last = search("search.q", null, null, third.nextBeforeJobId(), 2);
        assertThat(last.jobs()).isEmpty();
        assertThat(last.hasMore()).isFalse();
    }

    @Test
    void aPageEmptiedByTheStateFilterStillLeadsOn() {
        long old = enqueue("k.deep", "search.deep", null);
        Fixtures.claim(riffle, "search.deep", 1).get(0).complete().block(Fixtures.TIMEOUT);
        Fixtures.enqueue(riffle, "search.deep", RiffleAdmin.SEARCH_SCAN_FACTOR + 1);
        // limit 1 looks up SEARCH_SCAN_FACTOR candidates: all available, so none is kept, but the page says go on
        JobPage empty = search("search.deep", null, JobState.COMPLETED, 0, 1);
        assertThat(empty.jobs()).isEmpty();
        assertThat(empty.hasMore()).isTrue();
        JobPage found = search("search.deep", null, JobState.COMPLETED, empty.nextBeforeJobId(), 1);
        assertThat(ids(found)).containsExactly(old);
    }

    @Test
    void badArgumentsAreRefused() {
        assertThatThrownBy(() -> search("search.q", null, null, 0, 0)).isInstanceOf(InvalidJobException.class)
                .hasMessageContaining("limit");
        assertThatThrownBy(() -> search("search.q", null, null, 0, RiffleAdmin.MAX_SEARCH + 1))
                .isInstanceOf(InvalidJobException.class);
        assertThatThrownBy(() -> search("search.q", null, null, -1, 10)).isInstanceOf(InvalidJobException.class)
                .hasMessageContaining("beforeJobId");
        assertThatThrownBy(() -> search("bad queue", null, null, 0, 10)).isInstanceOf(InvalidJobException.class);
        assertThatThrownBy(() -> search(null, "-kind", null, 0, 10)).isInstanceOf(InvalidJobException.class);
    }

    @Test
    void queueDepthsCountTheBacklogAndTheDlq() {
        Map<String, QueueDepth> depths = riffle.admin().queueDepths(List.of("search.q", "search.none"))
                .collectMap(QueueDepth::queue, Function.identity()).block(Fixtures.TIMEOUT);
        QueueDepth q = depths.get("search.q");
        assertThat(q.available()).isEqualTo(2);
        assertThat(q.running()).isZero();
        assertThat(q.scheduled()).as("the scheduled and the retryable job").isEqualTo(2);
        assertThat(q.dlq()).isEqualTo(1);
        assertThat(q.oldestAvailableAge()).isPositive();
        assertThat(depths.get("search.none")).isEqualTo(new QueueDepth("search.none", 0, 0, 0, 0, Duration.ZERO));
        assertThatThrownBy(() -> riffle.admin().queueDepths(List.of("bad queue")).collectList().block(Fixtures.TIMEOUT))
                .isInstanceOf(InvalidJobException.class);
    }
}
