package dev.riffle.admin;

import dev.riffle.admin.internal.AdminRouter;
import java.util.Objects;
import org.springframework.http.HttpStatusCode;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Mounts the admin API and dashboard in a Spring WebFlux application, under {@link AdminHttpOptions#prefix()}
 * (docs/dashboard.md). The only class of this module that uses Spring (an optional dependency: add
 * {@code spring-webflux}, which a WebFlux application has): the routes answer exactly as on Reactor Netty.
 *
 * <pre>{@code
 * @Bean(destroyMethod = "dispose")
 * RiffleAdminHttp riffleAdmin(Riffle riffle) {
 *     return RiffleAdminHttp.create(riffle, AdminHttpOptions.builder().prefix("/riffle").build());
 * }
 *
 * @Bean
 * RouterFunction<ServerResponse> riffleAdminRoutes(RiffleAdminHttp admin) {
 *     return RiffleAdminWebFlux.routerFunction(admin);
 * }
 * }</pre>
 *
 * The {@link AdminAuthorizer} gets Spring's {@link ServerWebExchange} as {@link AdminRequest#nativeRequest()}
 * (principal, session, cookies). Paths are matched within the application's base path
 * ({@code spring.webflux.base-path}); the redirect to the trailing slash keeps it.
 */
public final class RiffleAdminWebFlux {

    private RiffleAdminWebFlux() {}

    /**
     * One route for everything under the prefix; every other path falls through to the application's routes. The
     * sampler stays {@code admin}'s: dispose it when the application stops.
     */
    public static RouterFunction<ServerResponse> routerFunction(RiffleAdminHttp admin) {
        AdminRouter router = Objects.requireNonNull(admin, "admin").router();
        return RouterFunctions.route(req -> router.matches(req.path()), req -> router.handle(new AdminRouter.Request(
                        req.method().name(), uri(req), req.headers()::firstHeader, req.exchange()))
                .flatMap(r -> {
                    ServerResponse.BodyBuilder out = ServerResponse.status(HttpStatusCode.valueOf(r.status()));
                    String base = req.requestPath().contextPath().value();
                    r.headers().forEach((name, value) -> out.header(name,
                            name.equals("Location") && value.startsWith("/") ? base + value : value));
                    return r.body().length == 0 ? out.build() : out.bodyValue(r.body());
                }));
    }

    /** Path and query within the application's base path, as the router matches them. */
    private static String uri(ServerRequest request) {
        String query = request.uri().getRawQuery();
        return request.path() + (query == null ? "" : "?" + query);
    }
}
