package dev.riffle.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.test.RiffleTest;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.http.server.reactive.ContextPathCompositeHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * The admin routes mounted in a Spring WebFlux application (its functional routes on its Reactor Netty adapter,
 * without Boot) beside the application's own route: the same answers as on Reactor Netty, and the authorizer gets
 * Spring's exchange. One engine, two applications (read-write under a hook, read-only), and one
 * under a base path.
 */
@RiffleTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminWebFluxIT {

    private RiffleAdminHttp admin;
    private RiffleAdminHttp readOnlyAdmin;
    private DisposableServer app;
    private DisposableServer readOnlyApp;
    private Http http;

    @BeforeAll
    void start(Riffle riffle) {
        AdminHttpOptions.Builder opts = AdminHttpOptions.builder().prefix("/ops/riffle")
                .sampleInterval(Duration.ofMillis(100))
                // the hook sees Spring's exchange: denies a request the application marked with a header
                .authorizer((req, access) -> Mono.just(req.nativeRequest() instanceof ServerWebExchange ex
                        && !ex.getRequest().getHeaders().containsHeader("X-Deny")));
        admin = RiffleAdminHttp.create(riffle, opts.build());
        readOnlyAdmin = RiffleAdminHttp.create(riffle, opts.readOnly(true).build());
        app = serve(admin);
        readOnlyApp = serve(readOnlyAdmin);
        http = new Http(app);
    }

    private static DisposableServer serve(RiffleAdminHttp admin) {
        RouterFunction<ServerResponse> routes = RouterFunctions.route()
                .GET("/hello", req -> ServerResponse.ok().bodyValue("hi"))
                .build()
                .and(RiffleAdminWebFlux.routerFunction(admin));
        ReactorHttpHandlerAdapter adapter = new ReactorHttpHandlerAdapter(RouterFunctions.toHttpHandler(routes));
        return HttpServer.create().host("127.0.0.1").port(0).handle(adapter).bindNow();
    }

    @AfterAll
    void stop() {
        for (DisposableServer s : new DisposableServer[] {app, readOnlyApp}) {
            if (s != null) {
                s.disposeNow();
            }
        }
        for (RiffleAdminHttp a : new RiffleAdminHttp[] {admin, readOnlyAdmin}) {
            if (a != null) {
                a.dispose();
            }
        }
    }

    @Test
    void theApplicationsOwnRouteStillAnswersAndOthersStay404() {
        assertThat(http.get("/hello").body()).isEqualTo("hi");
        assertThat(http.get("/riffle/api/queues").status()).as("nothing at the default prefix").isEqualTo(404);
        assertThat(http.get("/ops/riffleX").status()).as("a sibling path is not the prefix").isEqualTo(404);
    }

    @Test
    void servesThePageAndRedirectsToTheTrailingSlash() {
        http.assertServesThePageAt("/ops/riffle");
    }

    @Test
    void matchesWithinTheApplicationsBasePathAndRedirectsKeepingIt() {
        RouterFunction<ServerResponse> routes = RiffleAdminWebFlux.routerFunction(admin);
        DisposableServer based = HttpServer.create().host("127.0.0.1").port(0).handle(new ReactorHttpHandlerAdapter(
                new ContextPathCompositeHandler(Map.of("/app", RouterFunctions.toHttpHandler(routes))))).bindNow();
        try {
            Http h = new Http(based);
            Http.Response redirect = h.get("/app/ops/riffle");
            assertThat(redirect.status()).isEqualTo(302);
            assertThat(redirect.headers().get("Location")).isEqualTo("/app/ops/riffle/");
            assertThat(h.get("/app/ops/riffle/api/status").status()).isEqualTo(200);
        } finally {
            based.disposeNow();
        }
    }

    @Test
    void servesTheJsonApi() {
        Http.Response queues = http.get("/ops/riffle/api/queues");
        assertThat(queues.status()).isEqualTo(200);
        assertThat(queues.headers().get("Content-Type")).startsWith("application/json");
        assertThat(queues.json().get("readOnly").asBoolean()).isFalse();
        assertThat(queues.json().get("queues").isArray()).isTrue();
        Http.Response missing = http.get("/ops/riffle/api/nope");
        assertThat(missing.status()).isEqualTo(404);
        assertThat(missing.json().get("error").asString()).isEqualTo("not_found");
        Http.Response bad = http.get("/ops/riffle/api/jobs?limit=0");
        assertThat(bad.status()).isEqualTo(400);
        assertThat(bad.json().get("field").asString()).isEqualTo("limit");
    }

    @Test
    void refusesActionsAsOnReactorNetty() {
        Http.Response get = http.get("/ops/riffle/api/jobs/1/cancel");
        assertThat(get.status()).isEqualTo(405);
        assertThat(get.headers().get("Allow")).isEqualTo("POST");
        assertThat(get.json().get("error").asString()).isEqualTo("method_not_allowed");
        Http.Response noHeader = http.call(HttpMethod.POST, "/ops/riffle/api/jobs/1/cancel", Map.of());
        assertThat(noHeader.status()).isEqualTo(403);
        assertThat(noHeader.json().get("error").asString()).isEqualTo("missing_header");
        Http.Response denied = http.call(HttpMethod.GET, "/ops/riffle/api/queues", Map.of("X-Deny", "1"));
        assertThat(denied.status()).isEqualTo(403);
        assertThat(denied.json().get("error").asString()).isEqualTo("forbidden");
        Http.Response readOnly = new Http(readOnlyApp).post("/ops/riffle/api/jobs/1/cancel");
        assertThat(readOnly.status()).isEqualTo(403);
        assertThat(readOnly.json().get("error").asString()).isEqualTo("read_only");
        Http.Response unknown = http.post("/ops/riffle/api/jobs/9000000000/cancel");
        assertThat(unknown.status()).as("an allowed action reaches the engine").isEqualTo(404);
        assertThat(unknown.json().get("field").asString()).isEqualTo("id");
    }
}
