package dev.riffle.admin;

import reactor.core.publisher.Mono;

/**
 * The application's own authentication and authorization, asked before every request the admin routes serve (the
 * page and its scripts included). Emitting {@code true} lets the request through; {@code false}, an empty
 * {@code Mono} or an error answers 403 (an error is logged: a hook that fails denies, it never lets through).
 * Called on the server's event loop: it must not block (look a session up reactively, or check a header).
 */
@FunctionalInterface
public interface AdminAuthorizer {

    /** Lets every request through: the default, for a server only operators can reach. */
    AdminAuthorizer ALLOW_ALL = (request, access) -> Mono.just(true);

    /**
     * Whether {@code request} may proceed.
     *
     * @param request the request: method, URI, headers, and the server's own request for cookies, the session or
     *                the remote address ({@link AdminRequest#nativeRequest()})
     * @param access what it would do: {@link Access#READ} for pages and GET endpoints, {@link Access#ACTION} for
     *               the POST actions (retry, purge, cancel, pause, resume)
     */
    Mono<Boolean> authorize(AdminRequest request, Access access);

    /** What a request would do. */
    enum Access {
        /** Reads: the page, its scripts and every GET endpoint. */
        READ,
        /** An operator action (a POST): DLQ retry and purge, cancel, queue pause and resume. */
        ACTION
    }
}
