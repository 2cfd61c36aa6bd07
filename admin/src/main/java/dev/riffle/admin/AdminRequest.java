package dev.riffle.admin;

import org.jspecify.annotations.Nullable;

/**
 * A request to the admin routes as the {@link AdminAuthorizer} sees it, whatever server carries it: Reactor Netty
 * ({@link RiffleAdminHttp#routes()}, {@link RiffleAdminHttp#start}) or Spring WebFlux ({@link RiffleAdminWebFlux}).
 * For cookies, the session, the principal or the remote address, use {@link #nativeRequest()}.
 */
public interface AdminRequest {

    /** The method, upper case ({@code GET}, {@code POST}, ...). */
    String method();

    /** The path and query as sent, from the application's root (with Spring, within its base path). */
    String uri();

    /** The first value of header {@code name} (case-insensitive), or null when absent. */
    @Nullable String header(String name);

    /**
     * The server's own request, for the application's authentication: Reactor Netty's
     * {@code reactor.netty.http.server.HttpServerRequest}, or Spring's
     * {@code org.springframework.web.server.ServerWebExchange} when mounted with {@link RiffleAdminWebFlux}.
     */
    Object nativeRequest();
}
