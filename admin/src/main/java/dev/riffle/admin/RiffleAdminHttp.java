package dev.riffle.admin;

import dev.riffle.admin.internal.AdminRouter;
import dev.riffle.admin.internal.QueueSampler;
import dev.riffle.engine.Riffle;
import java.util.Objects;
import java.util.function.Consumer;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * Riffle's admin HTTP API and dashboard for one engine (docs/dashboard.md). Either mount {@link #routes()} on the
 * application's Reactor Netty server:
 *
 * <pre>{@code
 * RiffleAdminHttp admin = RiffleAdminHttp.create(riffle, AdminHttpOptions.builder().readOnly(true).build());
 * HttpServer.create().port(8080).route(routes -> {
 *     routes.get("/hello", (req, res) -> res.sendString(Mono.just("hi")));
 *     admin.routes().accept(routes);   // everything under /riffle
 * }).bindNow();
 * }</pre>
 *
 * mount it in a Spring WebFlux application with {@link RiffleAdminWebFlux#routerFunction(RiffleAdminHttp)}, or start
 * a server of its own with {@link #start(Riffle, AdminHttpOptions)}. The page is at
 * {@code prefix + "/"}, the JSON endpoints under {@code prefix + "/api/"}. Every action is a POST carrying the
 * {@value #ACTION_HEADER} header; read-only mode refuses them all; the {@link AdminAuthorizer} is asked first.
 *
 * <p>Holds a queue sampler (rates and the chart): it reads the database once per
 * {@link AdminHttpOptions#sampleInterval()} while the API is being asked, and not at all after
 * {@link AdminHttpOptions#idleAfter()} without a request. {@link #dispose()} stops it; it never closes the engine.
 */
public final class RiffleAdminHttp implements Disposable {

    /** The header every action must carry (any value): a guard against cross-site requests. */
    public static final String ACTION_HEADER = AdminRouter.ACTION_HEADER;

    private final AdminHttpOptions options;
    private final QueueSampler sampler;
    private final AdminRouter router;

    private RiffleAdminHttp(Riffle riffle, AdminHttpOptions options) {
        this.options = options;
        this.sampler = new QueueSampler(riffle, options.sampleInterval(), options.samples(), options.idleAfter());
        this.router = new AdminRouter(riffle, options, sampler);
    }

    /** The admin routes of {@code riffle}; {@link #dispose()} them when the server stops. */
    public static RiffleAdminHttp create(Riffle riffle, AdminHttpOptions options) {
        return new RiffleAdminHttp(Objects.requireNonNull(riffle, "riffle"), Objects.requireNonNull(options, "options"));
    }

    /**
     * Starts a server of its own on {@link AdminHttpOptions#host()} and {@link AdminHttpOptions#port()} (0: any free
     * port; {@link DisposableServer#port()} says which). Disposing the server stops the sampler too; the engine is
     * left running. Cold.
     */
    public static Mono<DisposableServer> start(Riffle riffle, AdminHttpOptions options) {
        return Mono.defer(() -> {
            RiffleAdminHttp admin = create(riffle, options);
            return admin.bind().doOnNext(server -> server.onDispose(admin)).doOnError(e -> admin.dispose());
        });
    }

    /** Binds a server serving only these routes, on the options' host and port; this stays the caller's to dispose. */
    public Mono<DisposableServer> bind() {
        return HttpServer.create().host(options.host()).port(options.port()).route(routes()).bind()
                .map(server -> (DisposableServer) server);
    }

    /** The routes: one route that serves everything under {@link AdminHttpOptions#prefix()}. */
    public Consumer<HttpServerRoutes> routes() {
        return router::register;
    }

    /** The transport-neutral router, for the Spring WebFlux adapter ({@link RiffleAdminWebFlux}). */
    AdminRouter router() {
        return router;
    }

    /** The options. */
    public AdminHttpOptions options() {
        return options;
    }

    /** Stops the sampler. The routes keep answering, with the last samples. */
    @Override
    public void dispose() {
        sampler.dispose();
    }

    @Override
    public boolean isDisposed() {
        return sampler.isDisposed();
    }
}
