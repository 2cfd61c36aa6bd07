package dev.riffle.bench;

import java.time.Instant;
import java.time.temporal.ChronoUnit;

/** The job arguments both systems carry: {@code {"s":<seq>,"t":<epoch micros>,"p":"<padding>"}}. */
final class Payloads {

    private Payloads() {
    }

    static long epochMicros() {
        Instant now = Instant.now();
        return ChronoUnit.MICROS.between(Instant.EPOCH, now);
    }

    static String args(long seq, long epochMicros, String padding) {
        StringBuilder sb = new StringBuilder(32 + padding.length());
        sb.append("{\"s\":").append(seq).append(",\"t\":").append(epochMicros);
        if (!padding.isEmpty()) {
            sb.append(",\"p\":\"").append(padding).append('"');
        }
        return sb.append('}').toString();
    }

    static String padding(int n) {
        StringBuilder sb = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            sb.append((char) ('a' + i % 26));
        }
        return sb.toString();
    }

    /** Reads the sequence number back; tolerant of whitespace that jsonb adds ({@code "s": 12}). */
    static long seqOf(String json) {
        int i = json.indexOf("\"s\"");
        if (i < 0) {
            throw new IllegalArgumentException("no \"s\" in job args: " + json);
        }
        i += 3;
        while (i < json.length() && (json.charAt(i) == ':' || json.charAt(i) == ' ')) {
            i++;
        }
        long v = 0;
        boolean any = false;
        while (i < json.length()) {
            char c = json.charAt(i);
            if (c < '0' || c > '9') {
                break;
            }
            v = v * 10 + (c - '0');
            any = true;
            i++;
        }
        if (!any) {
            throw new IllegalArgumentException("bad \"s\" in job args: " + json);
        }
        return v;
    }
}
