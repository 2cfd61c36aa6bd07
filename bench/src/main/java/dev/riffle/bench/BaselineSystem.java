package dev.riffle.bench;

import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The yardstick: a minimal job table on plain JDBC, the way many queues are built.
 *
 * <ul>
 *   <li>enqueue: one multi-row {@code INSERT … VALUES (…), (…)} per batch, autocommit;</li>
 *   <li>claim: {@code UPDATE … SET state = 'running' WHERE id IN (SELECT id … FOR UPDATE SKIP LOCKED LIMIT n)
 *       RETURNING …}, one statement for up to as many jobs as there are free handler slots (capped by the claim
 *       batch); an empty claim sleeps for the poll interval (no LISTEN/NOTIFY);</li>
 *   <li>handlers run inline on the claim thread; a handler delay is a scheduled task, so no thread sleeps;</li>
 *   <li>ack: one {@code DELETE … WHERE id = ANY(?)} per batch of finished jobs, autocommit; a handler slot is freed
 *       when its DELETE has committed (the same rule as Riffle's {@code flatMap(…complete())}).</li>
 * </ul>
 */
final class BaselineSystem implements QueueSystem {

    static final String QUEUE = "bench";

    private final BenchConfig cfg;
    private final String schema;
    private final String table;
    private final BlockingQueue<Connection> enqueueConnections;
    private final List<Connection> allConnections = new ArrayList<>();
    private final Map<Connection, Map<Integer, PreparedStatement>> insertStatements = new ConcurrentHashMap<>();

    private volatile boolean running;
    private Semaphore slots;
    private int concurrency;
    private ScheduledExecutorService timer;
    private final List<Thread> threads = new ArrayList<>();
    private final LinkedBlockingQueue<Claimed> finished = new LinkedBlockingQueue<>();
    private JobSink sink;
    private final AtomicInteger claimStatements = new AtomicInteger();
    private final AtomicInteger emptyClaims = new AtomicInteger();
    private final AtomicInteger ackStatements = new AtomicInteger();
    private final AtomicInteger vacuums = new AtomicInteger();

    BaselineSystem(BenchConfig cfg) {
        this(cfg, "bench_baseline");
    }

    /** On another schema: a child JVM's unmeasured warm-up (WorkerMain). */
    BaselineSystem(BenchConfig cfg, String schema) {
        this.cfg = cfg;
        this.schema = schema;
        this.table = schema + ".jobs";
        this.enqueueConnections = new ArrayBlockingQueue<>(Math.max(1, cfg.enqueueConcurrency));
    }

    @Override
    public String name() {
        return "baseline";
    }

    @Override
    public String schema() {
        return schema;
    }

    @Override
    public Map<String, Object> describe() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("driver", "pgjdbc, autocommit");
        m.put("claim", "UPDATE ... WHERE id IN (SELECT ... ORDER BY id FOR UPDATE SKIP LOCKED LIMIT n) RETURNING");
        m.put("ack", "DELETE ... WHERE id = ANY(?)");
        m.put("claim_threads", cfg.baselineClaimers);
        m.put("ack_threads", cfg.baselineAckers);
        m.put("claim_batch_max", cfg.claimBatch);
        m.put("ack_batch_max", cfg.ackBatch);
        m.put("idle_poll_ms", cfg.baselinePollMs);
        m.put("wakeup", "polling (no LISTEN/NOTIFY)");
        m.put("vacuum", cfg.baselineVacuumSeconds > 0
                ? "VACUUM every " + cfg.baselineVacuumSeconds + " s while workers run" : "server autovacuum only");
        return m;
    }

    @Override
    public void reset(Connection admin) throws SQLException {
        try (Statement st = admin.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            st.execute("CREATE SCHEMA " + schema);
            st.execute("CREATE TABLE " + table + " ("
                    + " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    + " queue text NOT NULL,"
                    + " kind text NOT NULL,"
                    + " args jsonb NOT NULL,"
                    + " state text NOT NULL DEFAULT 'available',"
                    + " attempts int NOT NULL DEFAULT 0,"
                    + " enqueued_us bigint NOT NULL,"
                    + " created_at timestamptz NOT NULL DEFAULT now(),"
                    + " locked_at timestamptz)");
            st.execute("CREATE INDEX jobs_fetch ON " + table + " (queue, id) WHERE state = 'available'");
        }
    }

    @Override
    public void open() throws SQLException {
        for (int i = 0; i < Math.max(1, cfg.enqueueConcurrency); i++) {
            enqueueConnections.add(connect("enqueue"));
        }
    }

    private Connection connect(String role) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", cfg.url.user());
        if (cfg.url.password() != null) {
            p.setProperty("password", cfg.url.password());
        }
        p.setProperty("ApplicationName", "riffle-bench-baseline-" + role);
        Connection c = DriverManager.getConnection(cfg.url.jdbcUrl(), p);
        c.setAutoCommit(true);
        synchronized (allConnections) {
            allConnections.add(c);
        }
        return c;
    }

    @Override
    public void enqueue(List<BenchJob> jobs) throws Exception {
        if (jobs.isEmpty()) {
            return;
        }
        Connection c = enqueueConnections.take();
        try {
            // the inner map belongs to the connection, and a connection to one thread at a time
            Map<Integer, PreparedStatement> byRows = insertStatements.computeIfAbsent(c, k -> new HashMap<>());
            PreparedStatement ps = byRows.get(jobs.size());
            if (ps == null) {
                StringBuilder sql = new StringBuilder("INSERT INTO ").append(table)
                        .append(" (queue, kind, args, enqueued_us) VALUES ");
                for (int i = 0; i < jobs.size(); i++) {
                    sql.append(i == 0 ? "" : ", ").append("(?, ?, ?::jsonb, ?)");
                }
                ps = c.prepareStatement(sql.toString());
                byRows.put(jobs.size(), ps);
            }
            int p = 1;
            for (BenchJob j : jobs) {
                ps.setString(p++, QUEUE);
                ps.setString(p++, "bench");
                ps.setString(p++, j.argsJson());
                ps.setLong(p++, j.enqueuedMicros());
            }
            ps.executeUpdate();
        } finally {
            enqueueConnections.add(c);
        }
    }

    @Override
    public void startWorkers(int concurrency, Duration handlerDelay, JobSink sink) throws SQLException {
        this.sink = sink;
        this.concurrency = concurrency;
        this.slots = new Semaphore(concurrency);
        this.running = true;
        this.timer = Executors.newSingleThreadScheduledExecutor(daemon("baseline-handler-timer"));
        long delayNanos = handlerDelay.toNanos();
        for (int i = 0; i < cfg.baselineAckers; i++) {
            Connection c = connect("ack");
            threads.add(start("baseline-ack-" + i, () -> ackLoop(c)));
        }
        for (int i = 0; i < cfg.baselineClaimers; i++) {
            Connection c = connect("claim");
            threads.add(start("baseline-claim-" + i, () -> claimLoop(c, delayNanos)));
        }
        if (cfg.baselineVacuumSeconds > 0) {
            Connection c = connect("vacuum");
            threads.add(start("baseline-vacuum", () -> vacuumLoop(c)));
        }
    }

    /** Stands in for autovacuum on servers where it is off or slow: plain VACUUM of the job table, periodically. */
    private void vacuumLoop(Connection c) {
        long every = TimeUnit.SECONDS.toNanos(cfg.baselineVacuumSeconds);
        long next = System.nanoTime() + every;
        try (Statement st = c.createStatement()) {
            while (running) {
                if (System.nanoTime() < next) {
                    sleepMillis(50);
                    continue;
                }
                st.execute("VACUUM " + table);
                vacuums.incrementAndGet();
                next = System.nanoTime() + every;
            }
        } catch (SQLException e) {
            sink.error(e);
        }
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    private static Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void claimLoop(Connection c, long delayNanos) {
        String sql = "UPDATE " + table + " SET state = 'running', attempts = attempts + 1, locked_at = now()"
                + " WHERE id IN (SELECT id FROM " + table + " WHERE queue = ? AND state = 'available'"
                + " ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)"
                + " RETURNING id, args::text, enqueued_us";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            while (running) {
                if (!slots.tryAcquire(50, TimeUnit.MILLISECONDS)) {
                    continue;
                }
                int want = 1;
                int extra = Math.min(cfg.claimBatch - 1, slots.availablePermits());
                if (extra > 0 && slots.tryAcquire(extra)) {
                    want += extra;
                }
                List<Claimed> got = new ArrayList<>(want);
                try {
                    ps.setString(1, QUEUE);
                    ps.setInt(2, want);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            got.add(new Claimed(rs.getLong(1), Payloads.seqOf(rs.getString(2))));
                        }
                    }
                    claimStatements.incrementAndGet();
                } catch (SQLException e) {
                    sink.error(e);
                    slots.release(want);
                    sleepMillis(100);
                    continue;
                }
                if (got.size() < want) {
                    slots.release(want - got.size());
                }
                for (Claimed j : got) {
                    sink.started(j.seq);
                    if (delayNanos <= 0) {
                        finished.add(j);
                    } else {
                        timer.schedule(() -> finished.add(j), delayNanos, TimeUnit.NANOSECONDS);
                    }
                }
                if (got.isEmpty()) {
                    emptyClaims.incrementAndGet();
                    sleepMillis(cfg.baselinePollMs);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (SQLException e) {
            sink.error(e);
        }
    }

    private void ackLoop(Connection c) {
        String sql = "DELETE FROM " + table + " WHERE id = ANY(?)";
        List<Claimed> batch = new ArrayList<>(cfg.ackBatch);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            while (running || slots.availablePermits() < concurrency) {
                Claimed first = finished.poll(50, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.clear();
                batch.add(first);
                finished.drainTo(batch, cfg.ackBatch - 1);
                Long[] ids = new Long[batch.size()];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = batch.get(i).id;
                }
                while (true) {
                    try {
                        Array arr = c.createArrayOf("bigint", ids);
                        ps.setArray(1, arr);
                        ps.executeUpdate();
                        arr.free();
                        ackStatements.incrementAndGet();
                        break;
                    } catch (SQLException e) {
                        sink.error(e);
                        sleepMillis(100);
                    }
                }
                for (Claimed j : batch) {
                    sink.completed(j.seq);
                }
                slots.release(batch.size());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (SQLException e) {
            sink.error(e);
        }
    }

    private static void sleepMillis(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void stopWorkers() throws InterruptedException {
        running = false;
        for (Thread t : threads) {
            t.join(10_000);
        }
        threads.clear();
        if (timer != null) {
            timer.shutdownNow();
            timer = null;
        }
    }

    @Override
    public Map<String, Object> counters() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("claim_statements", claimStatements.get());
        m.put("empty_claims", emptyClaims.get());
        m.put("ack_statements", ackStatements.get());
        m.put("vacuums", vacuums.get());
        return m;
    }

    @Override
    public void close() {
        if (running) {
            try {
                stopWorkers();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        synchronized (allConnections) {
            for (Connection c : allConnections) {
                try {
                    c.close();
                } catch (SQLException ignored) {
                    // closing anyway
                }
            }
            allConnections.clear();
        }
        enqueueConnections.clear();
        insertStatements.clear();
        finished.clear();
    }

    private record Claimed(long id, long seq) {
    }
}
