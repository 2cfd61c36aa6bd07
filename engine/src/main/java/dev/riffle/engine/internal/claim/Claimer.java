package dev.riffle.engine.internal.claim;

import dev.riffle.engine.internal.attempt.AttemptServices;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.InFlight;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.internal.time.EngineClock;
import io.r2dbc.spi.Readable;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * One claim = one {@code claim_ready} statement (docs/design/delivery-contract.md): at most {@code max} jobs from one
 * lane, written as exactly one compact claim batch (or, for a materialized queue, one row-local claim and one lease per
 * job). After it commits, the lane's cursor advance is handed to the {@link CursorAdvancer}.
 */
public final class Claimer {

    /** What a claim call found. */
    public enum Status {
        /** Jobs were claimed. */
        CLAIMED,
        /** No visible work in these queues. */
        EMPTY,
        /** Work exists but every lane with work was being claimed by someone else. */
        BUSY
    }

    /** Result of one claim call. */
    public record Result(Status status, List<ClaimedJob> jobs) {}

    private record Row(String status, @Nullable ClaimedJob job, int shard, long laneSeq) {}

    private final Db db;
    private final CursorAdvancer advancer;
    private final AttemptServices services;
    private final EngineClock clock;
    private final InFlight inFlight;
    private final AtomicLong claimBatches = new AtomicLong();
    private final AtomicLong claimedJobs = new AtomicLong();
    private final AtomicLong emptyClaims = new AtomicLong();
    private final AtomicLong lockDetours = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger peakRunning = new java.util.concurrent.atomic.AtomicInteger();

    /** Creates the claimer; every job it hands out is wired to {@code services} from the start. */
    public Claimer(Db db, CursorAdvancer advancer, AttemptServices services, InFlight inFlight,
                   EngineClock clock) {
        this.db = db;
        this.advancer = advancer;
        this.services = services;
        this.clock = clock;
        this.inFlight = inFlight;
    }

    /**
     * Claims up to {@code max} jobs from {@code queues}; deadlines in seconds (0 = none) and claim-time lease
     * materialization flags, both aligned with queues.
     */
    public Mono<Result> claim(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int max) {
        return claim(queues, deadlineSecs, materialize, max, null);
    }

    /**
     * As {@link #claim(String[], Integer[], Boolean[], int)}, with each queue's claim capped at {@code caps[i]}
     * (null entries: no cap) through {@code claim_limited} (docs/limits.md); {@code caps} null is the plain claim.
     */
    public Mono<Result> claim(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int max,
                              Integer @Nullable [] caps) {
        return Mono.defer(() -> {
            peakRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
            // Counted down before the result is handed on: the subscriber may start its next claim from there.
            java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            Runnable countDown = () -> {
                if (done.compareAndSet(false, true)) {
                    running.decrementAndGet();
                }
            };
            return claimWithDetour(queues, deadlineSecs, materialize, max, caps)
                    .doOnSuccess(r -> countDown.run())
                    .doOnError(e -> countDown.run())
                    .doOnCancel(countDown);
        });
    }

    private Mono<Result> claimWithDetour(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int max,
                                         Integer @Nullable [] caps) {
        return claimOnce(queues, deadlineSecs, materialize, max, false, caps)
                // The segment lookup through the partitioned parent gave up after 2 ms because a prune holds (or
                // waits for) ACCESS EXCLUSIVE on a queue-ring child: claim again reading the children one by one,
                // around the locked one, instead of waiting for the prune's TRUNCATE.
                .onErrorResume(e -> "55P03".equals(Db.sqlState(e)),
                        e -> {
                            lockDetours.incrementAndGet();
                            return claimOnce(queues, deadlineSecs, materialize, max, true, caps);
                        });
    }

    private Mono<Result> claimOnce(String[] queues, Integer[] deadlineSecs, Boolean[] materialize, int max,
                                   boolean avoidParent, Integer @Nullable [] caps) {
        String statement = caps == null ? "claim" : "claim_limited";
        return db.query(statement, st -> {
                    st.bind("$1", queues).bind("$2", deadlineSecs).bind("$3", max).bind("$4", materialize)
                            .bind("$5", avoidParent);
                    if (caps != null) {
                        st.bind("$6", caps);
                    }
                }, this::map)
                .collectList()
                .map(rows -> {
                    if (rows.isEmpty() || rows.get(0).job() == null) {
                        emptyClaims.incrementAndGet();
                        String s = rows.isEmpty() ? "empty" : rows.get(0).status();
                        return new Result("busy".equals(s) ? Status.BUSY : Status.EMPTY, List.of());
                    }
                    List<ClaimedJob> jobs = new ArrayList<>(rows.size());
                    long maxSeq = Long.MIN_VALUE;
                    for (Row r : rows) {
                        jobs.add(r.job());
                        inFlight.add(r.job());
                        maxSeq = Math.max(maxSeq, r.laneSeq());
                    }
                    ClaimedJob first = jobs.get(0);
                    claimBatches.incrementAndGet();
                    claimedJobs.addAndGet(jobs.size());
                    advancer.advance(first.queue(), first.priority(), rows.get(0).shard(), maxSeq + 1);
                    return new Result(Status.CLAIMED, jobs);
                });
    }

    private Row map(Readable row) {
        String status = row.get("status", String.class);
        Long jobId = row.get("job_id", Long.class);
        if (jobId == null) {
            return new Row(status, null, 0, 0);
        }
        long runLease = row.get("run_lease", Long.class);
        int shard = row.get("enqueue_shard", Integer.class);
        long laneSeq = row.get("lane_seq", Long.class);
        Long deadlineUs = row.get("deadline_at_us", Long.class);
        String args = row.get("args", String.class);
        Receipt receipt = new Receipt(row.get("claim_slot", Integer.class),
                row.get("batch_id", Long.class), row.get("batch_index", Integer.class),
                row.get("receipt_id", Long.class), jobId, runLease);
        String queue = row.get("queue", String.class);
        ClaimedJob job = new ClaimedJob(jobId, runLease, row.get("attempt", Integer.class),
                row.get("max_attempts", Integer.class), row.get("kind", String.class), queue,
                row.get("priority", Integer.class), args == null ? "{}" : args,
                instantOfMicros(row.get("created_at_us", Long.class)),
                instantOfMicros(row.get("claimed_at_us", Long.class)),
                deadlineUs == null ? null : instantOfMicros(deadlineUs), receipt, services,
                row.get("payload", String.class), clock.nanos());
        if (row.get("lease_slot", Integer.class) != null) {
            job.markLeased();
        }
        return new Row(status, job, shard, laneSeq);
    }

    private static Instant instantOfMicros(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /** Claim statements that claimed something (each wrote one claim batch row). */
    public long claimBatches() {
        return claimBatches.get();
    }

    /** Jobs claimed. */
    public long claimedJobs() {
        return claimedJobs.get();
    }

    /** Claims that went around a queue-ring child locked by a prune instead of waiting for it. */
    public long lockDetours() {
        return lockDetours.get();
    }

    /** Claim statements in flight right now. */
    public int running() {
        return running.get();
    }

    /** The most claim statements in flight at once since start. */
    public int peakRunning() {
        return peakRunning.get();
    }

    /** Claim statements that found nothing. */
    public long emptyClaims() {
        return emptyClaims.get();
    }
}
