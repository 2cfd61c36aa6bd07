package dev.riffle.cli;

import dev.riffle.admin.AdminHttpOptions;
import dev.riffle.admin.RiffleAdminHttp;
import dev.riffle.engine.Riffle;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/** {@code riffle dashboard}: the admin HTTP API and dashboard page (docs/dashboard.md) until the process is stopped. */
@Command(name = "dashboard", mixinStandardHelpOptions = true,
        description = "Serve the admin HTTP API and the dashboard page for the schema until stopped (Ctrl-C). "
                + "Binds to this machine only unless --host says otherwise; put it behind your own authentication "
                + "before exposing it.")
final class DashboardCommand extends Base {

    @Option(names = "--host", defaultValue = AdminHttpOptions.DEFAULT_HOST,
            description = "address to bind (default: ${DEFAULT-VALUE})")
    String host = AdminHttpOptions.DEFAULT_HOST;

    @Option(names = "--port", defaultValue = "" + AdminHttpOptions.DEFAULT_PORT,
            description = "port, 0 for any free one (default: ${DEFAULT-VALUE})")
    int port = AdminHttpOptions.DEFAULT_PORT;

    @Option(names = "--prefix", defaultValue = AdminHttpOptions.DEFAULT_PREFIX,
            description = "path the page and the API are served under (default: ${DEFAULT-VALUE})")
    String prefix = AdminHttpOptions.DEFAULT_PREFIX;

    @Option(names = "--read-only", description = "refuse every action (retry, purge, cancel, pause, resume)")
    boolean readOnly;

    // for tests: stop by itself after this long instead of waiting for the process to be stopped
    @Option(names = "--run-for", hidden = true)
    @Nullable Duration runFor;

    @Override
    int run(Riffle riffle) {
        AdminHttpOptions options = AdminHttpOptions.builder().host(host).port(port).prefix(prefix).readOnly(readOnly)
                .build();
        DisposableServer server = RiffleAdminHttp.start(riffle, options).block(RiffleCli.TIMEOUT);
        Thread stop = new Thread(server::disposeNow, "riffle-dashboard-stop");
        Runtime.getRuntime().addShutdownHook(stop);
        out().printf("Riffle dashboard for schema %s at http://%s:%d%s/%s%n", root().schemaName(), host, server.port(),
                prefix, readOnly ? " (read-only)" : "");
        out().flush();
        Mono<Void> stopped = server.onDispose();
        (runFor == null ? stopped : stopped.timeout(runFor, Mono.empty())).block();
        server.disposeNow();
        try {
            Runtime.getRuntime().removeShutdownHook(stop);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running already: the process is being stopped
        }
        return RiffleCli.OK;
    }
}
