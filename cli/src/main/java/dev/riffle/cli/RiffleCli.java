package dev.riffle.cli;

import dev.riffle.engine.DatabaseUrl;
import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleConfig;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.SchemaNotReadyException;
import dev.riffle.migrations.RiffleMigrations;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The {@code riffle} command (docs/cli.md). Every subcommand connects with {@code --url} (or {@code RIFFLE_URL}) to
 * {@code --schema} (or {@code RIFFLE_SCHEMA}, default {@code riffle}), prints text, or JSON with {@code --json}, and
 * ends with one of the exit codes below, which scripts can test.
 */
@Command(name = "riffle", mixinStandardHelpOptions = true, versionProvider = RiffleCli.Version.class,
        description = "Operate a Riffle schema: migrate it, see its queues and rings, run the proof doctor, "
                + "manage the DLQ, pause and resume queues, look jobs up, serve the dashboard.",
        subcommands = {MigrateCommand.class, StatusCommand.class, DoctorCommand.class, DlqCommand.class,
                QueueCommand.class, JobCommand.class, DashboardCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:success", "1:the doctor found violations, or the command failed on the data (an id not found)",
                "2:usage error (unknown command or option, invalid name or value)", "3:cannot connect to the database",
                "4:the schema is not migrated (or migrated for another engine version)"})
public final class RiffleCli {

    /** Exit code: success. */
    public static final int OK = 0;
    /** Exit code: the doctor found violations, or the command failed on the data (an id not in the DLQ, ...). */
    public static final int FAILED = 1;
    /** Exit code: usage error (picocli's own code for a bad command line, and invalid names or values). */
    public static final int USAGE = 2;
    /** Exit code: the database cannot be reached (refused, unknown host, authentication, no such database). */
    public static final int CANNOT_CONNECT = 3;
    /** Exit code: the schema is not migrated, or not to the function contract this CLI's engine supports. */
    public static final int NOT_MIGRATED = 4;

    /** How long one command waits for the database at most. */
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    @Option(names = "--url", scope = ScopeType.INHERIT, defaultValue = "${env:RIFFLE_URL}",
            description = "database URL, e.g. postgresql://user:pass@host:5432/db (default: $RIFFLE_URL)")
    @Nullable String url;

    @Option(names = "--schema", scope = ScopeType.INHERIT, defaultValue = "${env:RIFFLE_SCHEMA:-riffle}",
            description = "Riffle schema (default: $RIFFLE_SCHEMA, else riffle)")
    String schema = RiffleConfig.DEFAULT_SCHEMA;

    @Option(names = "--json", scope = ScopeType.INHERIT, description = "print JSON instead of text")
    boolean json;

    /** Runs the command line and exits the JVM with its exit code. */
    public static void main(String[] args) {
        System.exit(run(System.out, System.err, args));
    }

    /**
     * Runs one command line in this JVM, printing to {@code out} and {@code err}, and returns its exit code
     * ({@link #OK}, {@link #FAILED}, {@link #USAGE}, {@link #CANNOT_CONNECT}, {@link #NOT_MIGRATED}).
     */
    public static int run(PrintStream out, PrintStream err, String... args) {
        CommandLine cl = commandLine();
        cl.setOut(new PrintWriter(new java.io.OutputStreamWriter(out, StandardCharsets.UTF_8), true));
        cl.setErr(new PrintWriter(new java.io.OutputStreamWriter(err, StandardCharsets.UTF_8), true));
        try {
            return cl.execute(args);
        } finally {
            cl.getOut().flush();
            cl.getErr().flush();
        }
    }

    /** The picocli command line, with the exit-code mapping of errors. */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new RiffleCli());
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            int code = exitCode(e);
            line.getErr().println("riffle: " + describe(e, code));
            return code;
        });
        return cl;
    }

    /** The exit code an error of a command maps to. */
    static int exitCode(Throwable e) {
        if (find(e, SchemaNotReadyException.class) != null) {
            return NOT_MIGRATED;
        }
        if (cannotConnect(e)) {
            return CANNOT_CONNECT;
        }
        if (find(e, InvalidJobException.class) != null || find(e, IllegalArgumentException.class) != null
                || find(e, CommandLine.ParameterException.class) != null) {
            return USAGE;
        }
        return FAILED;
    }

    private static String describe(Throwable e, int code) {
        Throwable x = reactor.core.Exceptions.unwrap(e);
        if (code == CANNOT_CONNECT) {
            // the driver's own words, from the innermost cause (connection refused, unknown host, ...)
            Throwable root = x;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            return "cannot connect to the database: " + (root.getMessage() == null ? root : root.getMessage());
        }
        String message = x.getMessage() == null ? x.toString() : x.getMessage();
        return code == NOT_MIGRATED ? "schema not ready: " + message + " (riffle migrate creates or upgrades it)" : message;
    }

    /**
     * True when the database could not be reached or refused the session: connection refused or reset, unknown host,
     * a timeout while connecting, SQLSTATE class 08 (connection exception), 28 (authentication) or 3D000 (no such
     * database).
     */
    static boolean cannotConnect(Throwable e) {
        for (Throwable x = e; x != null; x = x.getCause() == x ? null : x.getCause()) {
            // java.net.ConnectException covers Netty's refused and timed-out connects; the driver's connection
            // failures are R2dbcNonTransientResourceException; a pool that never got a connection times out.
            if (x instanceof java.net.ConnectException || x instanceof java.net.UnknownHostException
                    || x instanceof java.net.NoRouteToHostException || x instanceof java.nio.channels.UnresolvedAddressException
                    || x instanceof io.r2dbc.spi.R2dbcNonTransientResourceException
                    || x instanceof io.r2dbc.spi.R2dbcPermissionDeniedException
                    || x instanceof reactor.pool.PoolAcquireTimeoutException) {
                return true;
            }
            String state = x instanceof SQLException s ? s.getSQLState()
                    : x instanceof io.r2dbc.spi.R2dbcException r ? r.getSqlState() : null;
            if (state != null && (state.startsWith("08") || state.startsWith("28") || state.equals("3D000"))) {
                return true;
            }
        }
        return false;
    }

    private static <T extends Throwable> @Nullable T find(Throwable e, Class<T> type) {
        for (Throwable x = e; x != null; x = x.getCause() == x ? null : x.getCause()) {
            if (type.isInstance(x)) {
                return type.cast(x);
            }
        }
        return null;
    }

    /** The database location, or a usage error naming the missing option. */
    DatabaseUrl databaseUrl(CommandLine cl) {
        if (url == null || url.isBlank()) {
            throw new CommandLine.ParameterException(cl, "Missing database URL: give --url or set RIFFLE_URL");
        }
        return DatabaseUrl.parse(url);
    }

    /** The validated schema name. */
    String schemaName() {
        return RiffleMigrations.validateSchemaName(schema);
    }

    /**
     * Starts an engine for one command: maintenance off (a command line never becomes the leader), no migration, a
     * small pool. Fails with {@link SchemaNotReadyException} when the schema is not migrated.
     */
    Riffle engine(CommandLine cl) {
        DatabaseUrl db = databaseUrl(cl);
        RiffleConfig config = RiffleConfig.builder().url(db).schema(schemaName()).migrate(false).poolSize(2)
                .applicationName("riffle-cli")
                .maintenance(MaintenanceConfig.builder().enabled(false).build())
                .build();
        return Riffle.start(config).block(TIMEOUT);
    }

    /** Closes an engine a command started. */
    static void close(@Nullable Riffle riffle) {
        if (riffle != null) {
            riffle.close().block(TIMEOUT);
        }
    }

    /** The version printed by {@code --version}: the jar's implementation version when packaged. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = RiffleCli.class.getPackage().getImplementationVersion();
            return new String[] {"riffle " + (v == null ? "(development build)" : v)};
        }
    }
}
