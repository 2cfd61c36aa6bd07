package dev.riffle.engine.test.fault;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.Job;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * A worker process for chaos tests, launched with {@link ChildJvm} and killed at the worst moment (RELIABILITY.md
 * S02, S03). It starts an engine on an already migrated schema, subscribes to one queue and handles jobs according
 * to its role:
 *
 * <ul>
 *   <li>{@code complete}: completes every job (retrying the call through connection faults, see
 *       {@link Completions});</li>
 *   <li>{@code hang}: never completes; each handler holds its job forever, so the process keeps exactly
 *       {@code --concurrency} open attempts, which only rescue can close once the process is killed.</li>
 * </ul>
 *
 * <p>Arguments: {@code --url <r2dbc or jdbc url> --schema <schema> --queue <queue> --role hang|complete
 * [--concurrency N] [--app-name <application_name prefix>] [--pool-size N] [--maintenance true|false]
 * [--stdin-watch true|false] [--materialize true|false]}. {@code --materialize true} configures the queue to
 * materialize leases at claim time (row-local claims plus {@code leases} rows). {@code --maintenance false} keeps the process from ever becoming the maintenance
 * leader (rotation, prune, rescue), so a kill only takes workers down.
 *
 * <p>Protocol on stdout, one event per line, flushed per line: {@code READY} once subscribed;
 * {@code CLAIMED <jobId> <runLease>} per job received; {@code COMPLETED <jobId> <runLease> <outcome>} (role
 * {@code complete}) when the completion call returned; {@code COMPLETE_FAILED <jobId> <runLease> <error>} when it
 * gave up; {@code ERROR <message>} before exiting on a fatal error. Other lines (logs) may appear in between.
 * Stdout is written by one printer thread, so the engine's event-loop threads never block on a full pipe.
 *
 * <p>With {@code --stdin-watch true} (the default) the process exits when its stdin reaches end-of-file: the parent
 * test JVM died, and an orphaned worker would go on claiming from the test's database.
 */
public final class ChaosWorkerMain {

    /** Exit code when the arguments are wrong. */
    public static final int EXIT_USAGE = 2;
    /** Exit code after a fatal error (printed as {@code ERROR}). */
    public static final int EXIT_FAILED = 1;
    /** Exit code when the parent went away (stdin closed). */
    public static final int EXIT_ORPHANED = 3;

    private ChaosWorkerMain() {}

    /** Handler behaviour. */
    enum Role { HANG, COMPLETE }

    record Options(DatabaseUrl url, String schema, String queue, Role role, int concurrency, String appName,
                   int poolSize, boolean maintenance, boolean stdinWatch, boolean materialize) {

        static Options parse(String[] args) {
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (!a.startsWith("--")) {
                    throw new IllegalArgumentException("unexpected argument '" + a + "'");
                }
                int eq = a.indexOf('=');
                if (eq > 0) {
                    m.put(a.substring(2, eq), a.substring(eq + 1));
                } else if (i + 1 < args.length) {
                    m.put(a.substring(2), args[++i]);
                } else {
                    throw new IllegalArgumentException("option " + a + " needs a value");
                }
            }
            String url = require(m, "url");
            String schema = require(m, "schema");
            String queue = require(m, "queue");
            Role role = switch (require(m, "role").toLowerCase(Locale.ROOT)) {
                case "hang" -> Role.HANG;
                case "complete" -> Role.COMPLETE;
                default -> throw new IllegalArgumentException("--role must be hang or complete, got " + m.get("role"));
            };
            int concurrency = Integer.parseInt(m.getOrDefault("concurrency", "8"));
            if (concurrency < 1 || concurrency > 10_000) {
                throw new IllegalArgumentException("--concurrency must be between 1 and 10000");
            }
            String appName = m.getOrDefault("app-name", "riffle-chaos-" + ProcessHandle.current().pid());
            int poolSize = Integer.parseInt(m.getOrDefault("pool-size", "4"));
            boolean maintenance = Boolean.parseBoolean(m.getOrDefault("maintenance", "true"));
            boolean stdinWatch = Boolean.parseBoolean(m.getOrDefault("stdin-watch", "true"));
            boolean materialize = Boolean.parseBoolean(m.getOrDefault("materialize", "false"));
            m.keySet().removeAll(java.util.List.of("url", "schema", "queue", "role", "concurrency", "app-name",
                    "pool-size", "maintenance", "stdin-watch", "materialize"));
            if (!m.isEmpty()) {
                throw new IllegalArgumentException("unknown options " + m.keySet());
            }
            return new Options(DatabaseUrl.parse(url), schema, queue, role, concurrency, appName, poolSize, maintenance,
                    stdinWatch, materialize);
        }

        private static String require(Map<String, String> m, String key) {
            String v = m.get(key);
            if (v == null || v.isBlank()) {
                throw new IllegalArgumentException("--" + key + " is required");
            }
            return v;
        }
    }

    /** Entry point; see the class comment for arguments and output. */
    public static void main(String[] args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("usage: ChaosWorkerMain --url <url> --schema <schema> --queue <queue> --role hang|complete "
                    + "[--concurrency N] [--app-name name] [--pool-size N] [--maintenance true|false] [--stdin-watch true|false] "
                    + "[--materialize true|false]\n"
                    + e.getMessage());
            System.exit(EXIT_USAGE);
            return;
        }
        Printer out = new Printer(System.out);
        try {
            run(options, out);
        } catch (RuntimeException | LinkageError e) {
            // A linkage error (a jar replaced under a running build) must still end in an ERROR line, not a silent exit.
            out.line("ERROR " + oneLine(e));
            out.flushAndStop(Duration.ofSeconds(2));
            System.exit(EXIT_FAILED);
        }
    }

    private static void run(Options o, Printer out) {
        if (o.stdinWatch()) {
            watchStdin(System.in, out);
        }
        Riffle riffle = Riffle.start(RiffleConfig.builder().url(o.url()).schema(o.schema()).migrate(false)
                        .applicationName(o.appName()).poolSize(o.poolSize())
                        .queue(o.materialize() ? dev.riffle.engine.api.QueueConfig.of(o.queue()).withMaterializedLeases()
                                               : dev.riffle.engine.api.QueueConfig.of(o.queue()))
                        .maintenance(MaintenanceConfig.builder().enabled(o.maintenance()).build()).build())
                .block(Duration.ofSeconds(60));
        CountDownLatch done = new CountDownLatch(1);
        AtomicBoolean failed = new AtomicBoolean();
        Disposable subscription = riffle.subscribe(o.queue())
                .flatMap(job -> handle(o.role(), job, out), o.concurrency(), 1)
                .subscribe(v -> {}, e -> {
                    failed.set(true);
                    out.line("ERROR subscription failed: " + oneLine(e));
                    done.countDown();
                }, done::countDown);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // A polite stop (SIGTERM) closes the engine so buffered completions are flushed; SIGKILL skips this.
            subscription.dispose();
            riffle.close().block(Duration.ofSeconds(10));
            out.flushAndStop(Duration.ofSeconds(2));
        }, "chaos-worker-shutdown"));
        out.line("READY");
        try {
            done.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (failed.get()) {
            // Exit through the shutdown hook, which closes the engine and flushes the ERROR line.
            System.exit(EXIT_FAILED);
        }
    }

    private static Mono<Void> handle(Role role, Job job, Printer out) {
        out.line("CLAIMED " + job.id() + " " + job.runLease());
        if (role == Role.HANG) {
            return Mono.never();
        }
        return Completions.complete(job, 20, Duration.ofMillis(50))
                .doOnNext(outcome -> out.line("COMPLETED " + job.id() + " " + job.runLease() + " " + outcome))
                .onErrorResume(e -> {
                    out.line("COMPLETE_FAILED " + job.id() + " " + job.runLease() + " " + oneLine(e));
                    return Mono.empty();
                })
                .then();
    }

    private static void watchStdin(InputStream in, Printer out) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[256];
            try {
                while (in.read(buf) >= 0) {
                    // Content is ignored; only end-of-file matters.
                }
            } catch (IOException e) {
                // A broken stdin means the parent is gone as surely as end-of-file does.
            }
            out.line("ERROR parent went away (stdin closed); exiting");
            out.flushAndStop(Duration.ofSeconds(1));
            Runtime.getRuntime().halt(EXIT_ORPHANED);
        }, "chaos-worker-stdin-watch");
        t.setDaemon(true);
        t.start();
    }

    private static String oneLine(Throwable e) {
        return String.valueOf(e).replace('\n', ' ').replace('\r', ' ');
    }

    /**
     * Moves stdout writes off the callers' threads: handlers run on Netty event loops, and a blocking
     * {@code println} there would stall the engine whenever the parent reads the pipe slowly.
     */
    static final class Printer {
        private final Queue<String> queue = new ConcurrentLinkedQueue<>();
        private final PrintStream target;
        private final Thread thread;
        private volatile boolean stopping;

        Printer(PrintStream target) {
            this.target = target;
            this.thread = new Thread(this::loop, "chaos-worker-stdout");
            thread.setDaemon(true);
            thread.start();
        }

        void line(String s) {
            queue.add(s);
            LockSupport.unpark(thread);
        }

        void flushAndStop(Duration timeout) {
            stopping = true;
            LockSupport.unpark(thread);
            try {
                thread.join(timeout.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        private void loop() {
            while (true) {
                String s = queue.poll();
                if (s != null) {
                    target.println(s);
                    target.flush();
                    continue;
                }
                if (stopping) {
                    return;
                }
                LockSupport.parkNanos(this, 50_000_000L);
            }
        }
    }
}
