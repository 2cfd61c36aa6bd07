package dev.riffle.admin.internal;

import dev.riffle.admin.AdminAuthorizer.Access;
import dev.riffle.admin.AdminHttpOptions;
import dev.riffle.admin.AdminJson;
import dev.riffle.admin.AdminRequest;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleAdmin;
import dev.riffle.engine.RiffleStats;
import dev.riffle.engine.api.CancelResult;
import dev.riffle.engine.api.DlqFilter;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobInfo;
import dev.riffle.engine.api.JobPage;
import dev.riffle.engine.api.JobState;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueDepth;
import dev.riffle.engine.api.RingStatus;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.http.server.HttpServerRoutes;
import tools.jackson.core.JsonGenerator;

/**
 * Routes every request under the prefix: finds the endpoint, answers 404 or 405 (with {@code Allow}) itself, asks
 * the authorizer, refuses actions in read-only mode and without the {@value #ACTION_HEADER} header, validates the
 * path and query, and turns the engine's answer or error into JSON. One route predicate on the prefix, so the
 * application's own routes beside it are untouched.
 */
public final class AdminRouter {

    private static final Logger log = LoggerFactory.getLogger(AdminRouter.class);

    /**
     * Every action must carry this header (any value). A plain HTML form or a cross-site "simple" request cannot set
     * it, so a page elsewhere cannot make a logged-in operator's browser retry or purge (CSRF); the dashboard and
     * scripts set it.
     */
    public static final String ACTION_HEADER = "X-Riffle-Admin";

    /** Default page of the job and DLQ lists. */
    static final int DEFAULT_LIMIT = 50;

    private static final Pattern JOB_ID = Pattern.compile("[1-9][0-9]{0,18}");

    private final Riffle riffle;
    private final RiffleAdmin admin;
    private final AdminHttpOptions options;
    private final QueueSampler sampler;
    private final StaticPage page;

    /** Routes for {@code riffle}; the sampler is the caller's to dispose. */
    public AdminRouter(Riffle riffle, AdminHttpOptions options, QueueSampler sampler) {
        this.riffle = riffle;
        this.admin = riffle.admin();
        this.options = options;
        this.sampler = sampler;
        this.page = StaticPage.load();
    }

    /** Adds the one route that serves everything under the prefix: a thin adapter over {@link #handle}. */
    public void register(HttpServerRoutes routes) {
        routes.route(req -> matches(new QueryStringDecoder(req.uri()).path()), (req, res) -> handle(
                new Request(req.method().name(), req.uri(), req.requestHeaders()::get, req))
                .flatMap(r -> {
                    HttpServerResponse out = res.status(r.status());
                    r.headers().forEach(out::header);
                    return r.body().length == 0 ? out.send().then() : out.sendByteArray(Mono.just(r.body())).then();
                }));
    }

    /** Whether {@code path} (without the query) is the prefix or under it: the one thing a server adapter matches. */
    public boolean matches(String path) {
        String prefix = options.prefix();
        return path.equals(prefix) || path.startsWith(prefix + "/");
    }

    /**
     * Serves one request under the prefix, whatever the server: the answer's status, headers and body, which the
     * server adapter writes as they are. Never errors (failures become 500 JSON answers).
     */
    public Mono<Response> handle(AdminRequest req) {
        QueryStringDecoder uri = new QueryStringDecoder(req.uri());
        String rest = uri.path().substring(options.prefix().length());
        if (rest.isEmpty()) {
            // the page loads its script and the API by relative URLs, which need the trailing slash
            return Mono.just(new Response(HttpResponseStatus.FOUND.code(), Map.of("Location", options.prefix() + "/"),
                    new byte[0]));
        }
        String[] seg = rest.substring(1).split("/", -1);
        Endpoint endpoint = resolve(seg);
        if (endpoint == null) {
            return Mono.just(Reply.error(HttpResponseStatus.NOT_FOUND, "not_found", null, "no such endpoint: " + rest)
                    .response());
        }
        String method = req.method();
        if (!endpoint.method().equals(method) && !(endpoint.method().equals("GET") && method.equals("HEAD"))) {
            Map<String, String> headers = new LinkedHashMap<>(Reply.error(HttpResponseStatus.METHOD_NOT_ALLOWED, "", null, "")
                    .response().headers());
            headers.put("Allow", endpoint.method());
            return Mono.just(new Response(HttpResponseStatus.METHOD_NOT_ALLOWED.code(), headers,
                    Reply.errorBody("method_not_allowed", null, endpoint.access() == Access.ACTION
                            ? "actions need POST" : "use " + endpoint.method()).getBytes(StandardCharsets.UTF_8)));
        }
        return Mono.defer(() -> options.authorizer().authorize(req, endpoint.access()))
                .onErrorResume(e -> {
                    log.warn("admin authorizer failed, request denied: {}", e.toString());
                    return Mono.just(false);
                })
                .defaultIfEmpty(false)
                .flatMap(allowed -> {
                    if (!allowed) {
                        return Mono.just(Reply.error(HttpResponseStatus.FORBIDDEN, "forbidden", null, "not authorized"));
                    }
                    if (endpoint.access() == Access.ACTION) {
                        if (options.readOnly()) {
                            return Mono.just(Reply.error(HttpResponseStatus.FORBIDDEN, "read_only", null,
                                    "the admin API is read-only"));
                        }
                        if (req.header(ACTION_HEADER) == null) {
                            return Mono.just(Reply.error(HttpResponseStatus.FORBIDDEN, "missing_header", null,
                                    "actions need the " + ACTION_HEADER + " header"));
                        }
                    }
                    if (seg[0].equals("api")) {
                        sampler.watched();
                    }
                    return Mono.defer(() -> endpoint.handler().apply(seg, uri.parameters()));
                })
                .onErrorResume(AdminRouter::failure)
                .map(Reply::response);
    }

    private static Mono<Reply> failure(Throwable e) {
        if (e instanceof InvalidJobException ij) {
            return Mono.just(Reply.error(HttpResponseStatus.BAD_REQUEST, "invalid", ij.field(), ij.getMessage()));
        }
        if (e instanceof BadRequest br) {
            return Mono.just(Reply.error(HttpResponseStatus.BAD_REQUEST, "invalid", br.field, br.getMessage()));
        }
        log.warn("admin request failed", e);
        return Mono.just(Reply.error(HttpResponseStatus.INTERNAL_SERVER_ERROR, "internal", null, e.toString()));
    }

    /**
     * An answer as any server writes it: status, headers (in order; none repeated) and body (empty: none).
     *
     * @param status  the HTTP status code
     * @param headers the response headers
     * @param body    the body bytes
     */
    public record Response(int status, Map<String, String> headers, byte[] body) {}

    /**
     * A request as a server adapter hands it over: its parts, read where the server keeps them.
     *
     * @param method        the method, upper case
     * @param uri           path and query, from the application's root
     * @param headers       the first value of a header (case-insensitive), or null
     * @param nativeRequest the server's own request
     */
    public record Request(String method, String uri, Function<String, @Nullable String> headers, Object nativeRequest)
            implements AdminRequest {
        @Override
        public @Nullable String header(String name) {
            return headers.apply(name);
        }
    }

    private record Endpoint(String method, Access access,
                            BiFunction<String[], Map<String, List<String>>, Mono<Reply>> handler) {}

    private static Endpoint get(BiFunction<String[], Map<String, List<String>>, Mono<Reply>> h) {
        return new Endpoint("GET", Access.READ, h);
    }

    private static Endpoint post(BiFunction<String[], Map<String, List<String>>, Mono<Reply>> h) {
        return new Endpoint("POST", Access.ACTION, h);
    }

    /** The endpoint a path names, or null. {@code seg} is the path after the prefix, split at '/'. */
    private @Nullable Endpoint resolve(String[] seg) {
        int n = seg.length;
        if (n == 1) {
            StaticPage.Asset asset = page.asset(seg[0]);
            return asset == null ? null : get((s, q) -> Mono.just(new Reply(HttpResponseStatus.OK, asset.type(), asset.bytes())));
        }
        if (!seg[0].equals("api")) {
            return null;
        }
        String a = seg[1];
        if (n == 2) {
            return switch (a) {
                case "queues" -> get((s, q) -> queues());
                case "metrics" -> get((s, q) -> metrics());
                case "jobs" -> get((s, q) -> search(q, null));
                case "dlq" -> get((s, q) -> search(q, JobState.DLQ));
                case "status" -> get((s, q) -> status());
                case "doctor" -> get((s, q) -> admin.doctor().map(r -> Reply.json(g -> AdminJson.doctor(g, r))));
                default -> null;
            };
        }
        if (n == 3 && a.equals("queues")) {
            return get((s, q) -> queue(queueName(s[2])));
        }
        if (n == 3 && a.equals("jobs")) {
            return get((s, q) -> job(jobId(s[2])));
        }
        if (n == 4 && a.equals("jobs") && seg[3].equals("cancel")) {
            return post((s, q) -> cancel(jobId(s[2])));
        }
        if (n == 4 && a.equals("dlq") && (seg[3].equals("retry") || seg[3].equals("purge"))) {
            boolean retry = seg[3].equals("retry");
            return post((s, q) -> dlqOne(jobId(s[2]), retry));
        }
        if (n == 4 && a.equals("queues") && (seg[3].equals("pause") || seg[3].equals("resume"))) {
            boolean pause = seg[3].equals("pause");
            return post((s, q) -> pause(queueName(s[2]), pause));
        }
        if (n == 5 && a.equals("queues") && seg[3].equals("dlq") && (seg[4].equals("retry") || seg[4].equals("purge"))) {
            boolean retry = seg[4].equals("retry");
            return post((s, q) -> dlqBulk(queueName(s[2]), name("kind", param(q, "kind")), retry));
        }
        return null;
    }

    // ---- reads

    private Mono<Reply> queues() {
        QueueSampler.History h = sampler.history();
        QueueSampler.Sample latest = h.latest();
        return Mono.just(Reply.json(g -> {
            g.writeStartObject();
            AdminJson.instant(g, "sampledAt", latest == null ? null : latest.at());
            g.writeNumberProperty("intervalMs", sampler.interval().toMillis());
            g.writeBooleanProperty("readOnly", options.readOnly());
            g.writeArrayPropertyStart("queues");
            if (latest != null) {
                for (QueueSampler.QueueSample q : latest.queues()) {
                    AdminJson.startQueueCounts(g, q.counts());
                    g.writeNumberProperty("dlq", q.dlq());
                    g.writeNumberProperty("oldestAvailableAgeSeconds", q.oldestAvailableAgeSeconds());
                    g.writeNumberProperty("completedPerSecond", h.completedPerSecond(q.counts().queue()));
                    g.writeEndObject();
                }
            }
            g.writeEndArray();
            g.writeEndObject();
        }));
    }

    private Mono<Reply> queue(String queue) {
        return Mono.zip(riffle.counts(queue), admin.queueDepths(List.of(queue)).next()
                        .defaultIfEmpty(new QueueDepth(queue, 0, 0, 0, 0, java.time.Duration.ZERO)))
                .map(t -> Reply.json(g -> {
                    AdminJson.startQueueCounts(g, t.getT1());
                    g.writeNumberProperty("dlq", t.getT2().dlq());
                    g.writeNumberProperty("oldestAvailableAgeSeconds", t.getT2().oldestAvailableAge().toMillis() / 1000.0);
                    g.writeEndObject();
                }));
    }

    private Mono<Reply> metrics() {
        List<QueueSampler.Point> points = sampler.history().points();
        return Mono.just(Reply.json(g -> {
            g.writeStartObject();
            g.writeNumberProperty("intervalMs", sampler.interval().toMillis());
            g.writeNumberProperty("historySeconds", options.history().toSeconds());
            g.writeArrayPropertyStart("points");
            for (QueueSampler.Point p : points) {
                g.writeStartObject();
                g.writeNumberProperty("t", p.at().toEpochMilli());
                g.writeNumberProperty("completedPerSecond", p.completedPerSecond());
                g.writeNumberProperty("oldestAvailableAgeSeconds", p.oldestAvailableAgeSeconds());
                g.writeNumberProperty("available", p.available());
                g.writeNumberProperty("running", p.running());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        }));
    }

    private Mono<Reply> search(Map<String, List<String>> q, @Nullable JobState fixedState) {
        String queue = name("queue", param(q, "queue"));
        String kind = name("kind", param(q, "kind"));
        JobState state = fixedState != null ? fixedState : state(param(q, "state"));
        long before = number("before", param(q, "before"), 0, Long.MAX_VALUE, 0);
        int limit = (int) number("limit", param(q, "limit"), 1, RiffleAdmin.MAX_SEARCH, DEFAULT_LIMIT);
        return admin.searchJobs(queue, kind, state, before, limit).map(AdminRouter::page);
    }

    private static Reply page(JobPage page) {
        return Reply.json(g -> {
            g.writeStartObject();
            g.writeArrayPropertyStart("jobs");
            for (JobInfo j : page.jobs()) {
                AdminJson.job(g, j);
            }
            g.writeEndArray();
            if (page.hasMore()) {
                g.writeNumberProperty("nextBefore", page.nextBeforeJobId());
            } else {
                g.writeNullProperty("nextBefore");
            }
            g.writeEndObject();
        });
    }

    private Mono<Reply> job(long id) {
        return admin.job(id).map(j -> Reply.json(g -> AdminJson.job(g, j)))
                .defaultIfEmpty(Reply.error(HttpResponseStatus.NOT_FOUND, "not_found", "id",
                        "job " + id + " not found (unknown, or its terminal history was pruned)"));
    }

    private Mono<Reply> status() {
        Mono<List<RingStatus>> rings = riffle.maintenance().status().collectList();
        Mono<Boolean> leader = riffle.maintenance().leaderPresent();
        return Mono.zip(rings, leader).map(t -> Reply.json(g -> {
            RiffleStats stats = riffle.stats();
            g.writeStartObject();
            g.writeStringProperty("schema", riffle.config().schema());
            g.writeBooleanProperty("readOnly", options.readOnly());
            g.writeBooleanProperty("leaderPresent", t.getT2());
            g.writeBooleanProperty("thisProcessLeader", stats.leader());
            g.writeObjectPropertyStart("process");
            g.writeNumberProperty("claimedJobs", stats.claimedJobs());
            g.writeNumberProperty("completed", stats.completed());
            g.writeNumberProperty("closed", stats.closed());
            g.writeNumberProperty("inFlight", stats.inFlight());
            g.writeBooleanProperty("listening", stats.listening());
            g.writeEndObject();
            g.writeArrayPropertyStart("rings");
            for (RingStatus r : t.getT1()) {
                AdminJson.ring(g, r);
            }
            g.writeEndArray();
            g.writeEndObject();
        }));
    }

    // ---- actions

    private Mono<Reply> cancel(long id) {
        return admin.cancel(id).map(r -> r == CancelResult.NOT_FOUND
                ? Reply.error(HttpResponseStatus.NOT_FOUND, "not_found", "id", "no cancellable job " + id)
                : Reply.json(g -> {
                    g.writeStartObject();
                    g.writeNumberProperty("id", id);
                    g.writeStringProperty("result", r.name().toLowerCase(Locale.ROOT));
                    g.writeEndObject();
                }));
    }

    private Mono<Reply> dlqOne(long id, boolean retry) {
        return (retry ? admin.retryDlq(id) : admin.purgeDlq(id)).map(done -> !done
                ? Reply.error(HttpResponseStatus.NOT_FOUND, "not_found", "id", "job " + id + " is not in the DLQ")
                : Reply.json(g -> {
                    g.writeStartObject();
                    g.writeNumberProperty("id", id);
                    g.writeStringProperty("result", retry ? "retried" : "purged");
                    g.writeEndObject();
                }));
    }

    private Mono<Reply> dlqBulk(String queue, @Nullable String kind, boolean retry) {
        DlqFilter filter = kind == null ? DlqFilter.queue(queue) : DlqFilter.of(queue, kind);
        return (retry ? admin.retryDlq(filter) : admin.purgeDlq(filter)).map(ids -> Reply.json(g -> {
            g.writeStartObject();
            g.writeStringProperty("queue", queue);
            g.writeArrayPropertyStart(retry ? "retried" : "purged");
            for (long id : ids) {
                g.writeNumber(id);
            }
            g.writeEndArray();
            g.writeEndObject();
        }));
    }

    private Mono<Reply> pause(String queue, boolean pause) {
        return (pause ? admin.pauseQueue(queue) : admin.resumeQueue(queue)).map(changed -> Reply.json(g -> {
            g.writeStartObject();
            g.writeStringProperty("queue", queue);
            g.writeBooleanProperty("paused", pause);
            g.writeBooleanProperty("changed", changed);
            g.writeEndObject();
        }));
    }

    // ---- input

    private static @Nullable String param(Map<String, List<String>> q, String name) {
        List<String> v = q.get(name);
        return v == null || v.isEmpty() || v.get(0).isEmpty() ? null : v.get(0);
    }

    static long jobId(String s) {
        if (!JOB_ID.matcher(s).matches()) {
            throw new BadRequest("id", "a job id is a positive number, got '" + shorten(s) + "'");
        }
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new BadRequest("id", "a job id is a positive number, got '" + shorten(s) + "'");
        }
    }

    private static String queueName(String s) {
        NewJob.checkName("queue", s);
        return s;
    }

    private static @Nullable String name(String field, @Nullable String s) {
        if (s != null) {
            NewJob.checkName(field, s);
        }
        return s;
    }

    private static @Nullable JobState state(@Nullable String s) {
        if (s == null) {
            return null;
        }
        for (JobState st : JobState.values()) {
            if (AdminJson.state(st).equals(s)) {
                return st;
            }
        }
        throw new BadRequest("state", "unknown state '" + shorten(s) + "'; one of scheduled, available, running, "
                + "waiting_external, retryable, completed, failed, cancelled, dlq");
    }

    private static long number(String field, @Nullable String s, long min, long max, long dflt) {
        if (s == null) {
            return dflt;
        }
        try {
            long v = Long.parseLong(s);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new BadRequest(field, field + " must be a number from " + min + " to " + max + ", got '" + shorten(s) + "'");
    }

    private static String shorten(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "...";
    }

    /** A request the endpoint cannot serve as asked: 400, naming the field. */
    static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String field;

        BadRequest(String field, String message) {
            super(message, null, false, false);
            this.field = field;
        }
    }

    /** A response: status, content type, body. */
    record Reply(HttpResponseStatus status, String contentType, byte[] body) {

        /** With the headers every answer carries, and the page's framing and script policy on HTML. */
        Response response() {
            Map<String, String> h = new LinkedHashMap<>();
            h.put("Content-Type", contentType);
            h.put("Cache-Control", "no-store");
            h.put("X-Content-Type-Options", "nosniff");
            if (contentType.startsWith("text/html")) {
                h.put("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
                h.put("X-Frame-Options", "DENY");
            }
            return new Response(status.code(), h, body);
        }

        static Reply json(java.util.function.Consumer<JsonGenerator> body) {
            return new Reply(HttpResponseStatus.OK, "application/json",
                    AdminJson.document(body).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        static Reply error(HttpResponseStatus status, String error, @Nullable String field, String message) {
            return new Reply(status, "application/json",
                    errorBody(error, field, message).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        static String errorBody(String error, @Nullable String field, String message) {
            return AdminJson.document(g -> {
                g.writeStartObject();
                g.writeStringProperty("error", error);
                if (field != null) {
                    g.writeStringProperty("field", field);
                }
                g.writeStringProperty("message", message);
                g.writeEndObject();
            });
        }
    }
}
