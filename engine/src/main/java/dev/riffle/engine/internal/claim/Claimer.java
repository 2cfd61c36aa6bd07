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
            long started = clock.nanos();
            return services.tracing().claim(queues, claimWithDetour(queues, deadlineSecs, materialize, max, caps),
                            r -> r.jobs().size())
                    .doOnSuccess(r -> countDown.run())
                    .doOnSuccess(r -> ClaimMeters.claimed(services.meters(), clock.nanos() - started, r))
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
                }, new RowMapper())
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

    /**
     * The claim statement's result columns in its SELECT order (hotpath.sql, "claim"); read by position, since a
     * read by name searches the row's columns on every call, twenty times per job. ClaimColumnsTest holds this list
     * equal to the statement.
     */
    static final List<String> COLUMNS = List.of("status", "job_id", "kind", "queue", "args", "priority", "attempt",
            "run_lease", "max_attempts", "lane_seq", "enqueue_shard", "claim_slot", "batch_id", "batch_index",
            "receipt_id", "claimed_at_us", "deadline_at_us", "created_at_us", "payload", "lease_slot");
    private static final int STATUS = 0;
    private static final int JOB_ID = 1;
    private static final int KIND = 2;
    private static final int QUEUE = 3;
    private static final int ARGS = 4;
    private static final int PRIORITY = 5;
    private static final int ATTEMPT = 6;
    private static final int RUN_LEASE = 7;
    private static final int MAX_ATTEMPTS = 8;
    private static final int LANE_SEQ = 9;
    private static final int ENQUEUE_SHARD = 10;
    private static final int CLAIM_SLOT = 11;
    private static final int BATCH_ID = 12;
    private static final int BATCH_INDEX = 13;
    private static final int RECEIPT_ID = 14;
    private static final int CLAIMED_AT_US = 15;
    private static final int DEADLINE_AT_US = 16;
    private static final int CREATED_AT_US = 17;
    private static final int PAYLOAD = 18;
    private static final int LEASE_SLOT = 19;

    /** The columns a claim's rows share, read from its first row (hotpath.sql, "claim"). */
    private record Header(String status, String queue, int priority, int shard, int claimSlot, long batchId,
                          long claimedAtUs, @Nullable Long deadlineUs) {}

    /**
     * Maps the rows of one claim statement in order. The shared columns are read from the row with batch_index 1,
     * which the statement returns first, and are NULL on the rows after it (rows of a materialized claim, batch_index
     * 0, carry them all). One mapper per claim call; a second
     * execution (resubscription) starts again at its own first row.
     */
    private final class RowMapper implements java.util.function.Function<Readable, Row> {
        private @Nullable Header header;

        @Override
        public Row apply(Readable row) {
            Long jobId = row.get(JOB_ID, Long.class);
            if (jobId == null) {
                return new Row(row.get(STATUS, String.class), null, 0, 0);
            }
            int batchIndex = row.get(BATCH_INDEX, Integer.class);
            Header h = header;
            // 1: a compact batch's first row; 0: a materialized claim's row, which has no batch and always carries
            // every column (claim_materialized).
            if (batchIndex <= 1) {
                h = new Header(row.get(STATUS, String.class), row.get(QUEUE, String.class),
                        row.get(PRIORITY, Integer.class), row.get(ENQUEUE_SHARD, Integer.class),
                        row.get(CLAIM_SLOT, Integer.class), row.get(BATCH_ID, Long.class),
                        row.get(CLAIMED_AT_US, Long.class), row.get(DEADLINE_AT_US, Long.class));
                header = h;
            } else if (h == null) {
                throw new IllegalStateException("claim row " + batchIndex + " of job " + jobId
                        + " came before its batch's first row");
            }
            long runLease = row.get(RUN_LEASE, Long.class);
            long laneSeq = row.get(LANE_SEQ, Long.class);
            String args = row.get(ARGS, String.class);
            Receipt receipt = new Receipt(h.claimSlot(), h.batchId(), batchIndex, row.get(RECEIPT_ID, Long.class),
                    jobId, runLease);
            Long deadlineUs = h.deadlineUs();
            ClaimedJob job = new ClaimedJob(jobId, runLease, row.get(ATTEMPT, Integer.class),
                    row.get(MAX_ATTEMPTS, Integer.class), row.get(KIND, String.class), h.queue(),
                    h.priority(), args == null ? "{}" : args,
                    instantOfMicros(row.get(CREATED_AT_US, Long.class)),
                    instantOfMicros(h.claimedAtUs()),
                    deadlineUs == null ? null : instantOfMicros(deadlineUs), receipt, services,
                    row.get(PAYLOAD, String.class), clock.nanos());
            if (row.get(LEASE_SLOT, Integer.class) != null) {
                job.markLeased();
            }
            return new Row(h.status(), job, h.shard(), laneSeq);
        }
    }

    private static Instant instantOfMicros(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /** The claim meters (RiffleMeter.CLAIM_DURATION, CLAIM_BATCH_SIZE). */
    private static final class ClaimMeters {
        static void claimed(dev.riffle.engine.internal.metrics.Recorder meters, long nanos, @Nullable Result r) {
            if (meters.enabled()) {
                meters.record(dev.riffle.engine.api.RiffleMeter.CLAIM_DURATION, nanos);
                if (r != null && !r.jobs().isEmpty()) {
                    meters.record(dev.riffle.engine.api.RiffleMeter.CLAIM_BATCH_SIZE, r.jobs().size());
                }
            }
        }
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
