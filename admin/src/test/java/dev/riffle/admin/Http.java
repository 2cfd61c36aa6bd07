package dev.riffle.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.HttpMethod;
import java.time.Duration;
import java.util.Map;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A small HTTP client for the tests: one request, its status, headers and body. */
final class Http {
    static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    record Response(int status, io.netty.handler.codec.http.HttpHeaders headers, String body) {
        JsonNode json() {
            return JSON.readTree(body);
        }
    }

    private final HttpClient client;

    Http(DisposableServer server) {
        this.client = HttpClient.create().baseUrl("http://127.0.0.1:" + server.port()).followRedirect(false);
    }

    Response get(String path) {
        return call(HttpMethod.GET, path, Map.of());
    }

    Response get(String path, Map<String, String> headers) {
        return call(HttpMethod.GET, path, headers);
    }

    /** A POST as the dashboard sends it: with the action header. */
    Response post(String path) {
        return call(HttpMethod.POST, path, Map.of(RiffleAdminHttp.ACTION_HEADER, "1"));
    }

    /** {@code prefix} redirects to {@code prefix + "/"}, which is the page (framing denied), and its script loads. */
    void assertServesThePageAt(String prefix) {
        Response redirect = get(prefix);
        assertThat(redirect.status()).isEqualTo(302);
        assertThat(redirect.headers().get("Location")).isEqualTo(prefix + "/");
        Response page = get(prefix + "/");
        assertThat(page.status()).isEqualTo(200);
        assertThat(page.headers().get("Content-Type")).startsWith("text/html");
        assertThat(page.headers().get("X-Frame-Options")).isEqualTo("DENY");
        assertThat(page.body()).contains("<script src=\"dashboard.js\">");
        assertThat(get(prefix + "/dashboard.js").body()).contains("confirmAction");
    }

    Response call(HttpMethod method, String path, Map<String, String> headers) {
        return client.headers(h -> headers.forEach(h::set))
                .request(method).uri(path)
                .responseSingle((res, body) -> body.asString().defaultIfEmpty("")
                        .map(b -> new Response(res.status().code(), res.responseHeaders(), b)))
                .switchIfEmpty(Mono.error(new IllegalStateException("no response")))
                .block(TIMEOUT);
    }
}
