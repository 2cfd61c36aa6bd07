package dev.riffle.admin;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of the admin HTTP routes and the standalone server. Immutable; {@link #builder()} starts from the
 * defaults below.
 *
 * @param prefix the path the routes are served under: starts with '/', no trailing '/', letters, digits and
 *               {@code -._/} only ({@value #DEFAULT_PREFIX}); the page is at {@code prefix + "/"}
 * @param readOnly when true every action answers 403 and the page shows no action buttons
 * @param authorizer asked before every request; denial answers 403 ({@link AdminAuthorizer#ALLOW_ALL})
 * @param sampleInterval how often the queue sampler reads every queue's counts while the dashboard is watched
 *                       ({@link #DEFAULT_SAMPLE_INTERVAL}): the rates' and the chart's resolution, and the load the
 *                       dashboard puts on the database
 * @param history how far back the chart reaches ({@link #DEFAULT_HISTORY}); at most {@value #MAX_SAMPLES} samples
 * @param idleAfter the sampler stops reading after this long without a request to the API, and starts again with the
 *                  next one ({@link #DEFAULT_IDLE_AFTER}), so a mounted but unwatched dashboard costs nothing
 * @param host the standalone server's bind address ({@value #DEFAULT_HOST}: this machine only)
 * @param port the standalone server's port, 0 for any free one ({@value #DEFAULT_PORT})
 */
public record AdminHttpOptions(String prefix, boolean readOnly, AdminAuthorizer authorizer, Duration sampleInterval,
                               Duration history, Duration idleAfter, String host, int port) {

    /** Default {@link #prefix()}. */
    public static final String DEFAULT_PREFIX = "/riffle";
    /** Default {@link #sampleInterval()}: one second, the page's refresh rate. */
    public static final Duration DEFAULT_SAMPLE_INTERVAL = Duration.ofSeconds(1);
    /** Default {@link #history()}: the chart's last five minutes. */
    public static final Duration DEFAULT_HISTORY = Duration.ofMinutes(5);
    /** Default {@link #idleAfter()}. */
    public static final Duration DEFAULT_IDLE_AFTER = Duration.ofMinutes(1);
    /** Default {@link #host()}. */
    public static final String DEFAULT_HOST = "127.0.0.1";
    /** Default {@link #port()}. */
    public static final int DEFAULT_PORT = 8089;
    /** Most samples kept ({@link #history()} over {@link #sampleInterval()}). */
    public static final int MAX_SAMPLES = 3600;

    /** Checks every setting. */
    public AdminHttpOptions {
        Objects.requireNonNull(prefix, "prefix");
        Objects.requireNonNull(authorizer, "authorizer");
        Objects.requireNonNull(sampleInterval, "sampleInterval");
        Objects.requireNonNull(history, "history");
        Objects.requireNonNull(idleAfter, "idleAfter");
        Objects.requireNonNull(host, "host");
        if (!prefix.isEmpty() && !prefix.matches("(/[A-Za-z0-9._-]+)+")) {
            throw new IllegalArgumentException("prefix must be empty or like /riffle or /ops/riffle, got '" + prefix + "'");
        }
        if (sampleInterval.compareTo(Duration.ofMillis(50)) < 0) {
            throw new IllegalArgumentException("sampleInterval must be at least 50 ms, got " + sampleInterval);
        }
        if (history.compareTo(sampleInterval) < 0 || history.dividedBy(sampleInterval) > MAX_SAMPLES) {
            throw new IllegalArgumentException("history must hold 1 to " + MAX_SAMPLES + " samples of "
                    + sampleInterval + ", got " + history);
        }
        if (idleAfter.isNegative() || idleAfter.isZero()) {
            throw new IllegalArgumentException("idleAfter must be positive, got " + idleAfter);
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, got " + port);
        }
    }

    /** The defaults. */
    public static AdminHttpOptions defaults() {
        return builder().build();
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** How many samples the sampler keeps. */
    public int samples() {
        return (int) history.dividedBy(sampleInterval);
    }

    /** Builds {@link AdminHttpOptions}. */
    public static final class Builder {
        private String prefix = DEFAULT_PREFIX;
        private boolean readOnly;
        private AdminAuthorizer authorizer = AdminAuthorizer.ALLOW_ALL;
        private Duration sampleInterval = DEFAULT_SAMPLE_INTERVAL;
        private Duration history = DEFAULT_HISTORY;
        private Duration idleAfter = DEFAULT_IDLE_AFTER;
        private String host = DEFAULT_HOST;
        private int port = DEFAULT_PORT;

        private Builder() {}

        /** See {@link AdminHttpOptions#prefix()}. */
        public Builder prefix(String prefix) {
            this.prefix = prefix;
            return this;
        }

        /** See {@link AdminHttpOptions#readOnly()}. */
        public Builder readOnly(boolean readOnly) {
            this.readOnly = readOnly;
            return this;
        }

        /** See {@link AdminHttpOptions#authorizer()}. */
        public Builder authorizer(AdminAuthorizer authorizer) {
            this.authorizer = authorizer;
            return this;
        }

        /** See {@link AdminHttpOptions#sampleInterval()}. */
        public Builder sampleInterval(Duration sampleInterval) {
            this.sampleInterval = sampleInterval;
            return this;
        }

        /** See {@link AdminHttpOptions#history()}. */
        public Builder history(Duration history) {
            this.history = history;
            return this;
        }

        /** See {@link AdminHttpOptions#idleAfter()}. */
        public Builder idleAfter(Duration idleAfter) {
            this.idleAfter = idleAfter;
            return this;
        }

        /** See {@link AdminHttpOptions#host()}. */
        public Builder host(String host) {
            this.host = host;
            return this;
        }

        /** See {@link AdminHttpOptions#port()}. */
        public Builder port(int port) {
            this.port = port;
            return this;
        }

        /** The options; throws {@link IllegalArgumentException} for an invalid setting. */
        public AdminHttpOptions build() {
            return new AdminHttpOptions(prefix, readOnly, authorizer, sampleInterval, history, idleAfter, host, port);
        }
    }
}
