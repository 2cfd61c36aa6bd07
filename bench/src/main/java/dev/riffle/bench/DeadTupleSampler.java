package dev.riffle.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Samples a schema's dead tuples every few seconds on a connection of its own while a soak runs (docs/validation):
 * {@code n_dead_tup} summed over the schema's tables, over the claim ring's closure partitions, and the table with
 * the most. {@code n_dead_tup} is the statistics collector's count (cheap; lags by about a second), not a scan.
 * {@link #mark} records when the load starts and stops, so samples can be placed on the load's own clock.
 */
final class DeadTupleSampler implements AutoCloseable {

    /** Closure partitions of the claim ring: row-local closures and compact closure batches. */
    static final String CLOSURE_PARTITIONS = "^(lease_claim_closures|lease_claim_closure_batches)_[0-9]+$";

    /** One sample; {@code seconds} since the sampler started. */
    record Sample(double seconds, long schemaDead, long closureDead, String worstTable, long worstDead) {
    }

    private final String schema;
    private final Connection conn;
    private final ScheduledExecutorService timer;
    private final long t0 = System.nanoTime();
    private final List<Sample> samples = new ArrayList<>();
    private volatile double loadStart = Double.NaN;
    private volatile double loadEnd = Double.NaN;
    private volatile String error;

    DeadTupleSampler(BenchConfig cfg, String schema, long everyMillis) throws SQLException {
        this.schema = schema;
        Properties p = new Properties();
        p.setProperty("user", cfg.url.user());
        if (cfg.url.password() != null) {
            p.setProperty("password", cfg.url.password());
        }
        p.setProperty("ApplicationName", "riffle-bench-sampler");
        conn = DriverManager.getConnection(cfg.url.jdbcUrl(), p);
        conn.setAutoCommit(true);
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "dead-tuple-sampler");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::sampleQuietly, 0, everyMillis, TimeUnit.MILLISECONDS);
    }

    /** {@code load-start} / {@code load-end} from {@link Runner#onPhase}. */
    void mark(String phase) {
        double now = (System.nanoTime() - t0) / 1e9;
        if (phase.equals("load-start")) {
            loadStart = now;
        } else if (phase.equals("load-end")) {
            loadEnd = now;
        }
    }

    double loadStart() {
        return loadStart;
    }

    double loadEnd() {
        return loadEnd;
    }

    /** The first error a sample ran into, or null. */
    String error() {
        return error;
    }

    synchronized List<Sample> samples() {
        return List.copyOf(samples);
    }

    private void sampleQuietly() {
        try {
            Sample s = sample();
            synchronized (this) {
                samples.add(s);
            }
        } catch (SQLException | RuntimeException e) {
            if (error == null) {
                error = e.toString();
            }
        }
    }

    private Sample sample() throws SQLException {
        double at = (System.nanoTime() - t0) / 1e9;
        try (PreparedStatement ps = conn.prepareStatement("SELECT coalesce(sum(n_dead_tup), 0),"
                + " coalesce(sum(n_dead_tup) FILTER (WHERE relname ~ ?), 0),"
                + " (array_agg(relname::text ORDER BY n_dead_tup DESC, relname))[1],"
                + " coalesce(max(n_dead_tup), 0)"
                + " FROM pg_stat_user_tables WHERE schemaname = ? AND relname <> 'flyway_schema_history'")) {
            ps.setString(1, CLOSURE_PARTITIONS);
            ps.setString(2, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Sample(at, rs.getLong(1), rs.getLong(2), rs.getString(3), rs.getLong(4));
            }
        }
    }

    /** Stops sampling after one last sample, and closes the connection. */
    @Override
    public void close() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(10, TimeUnit.SECONDS);
            sampleQuietly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            try {
                conn.close();
            } catch (SQLException e) {
                // best effort
            }
        }
    }
}
