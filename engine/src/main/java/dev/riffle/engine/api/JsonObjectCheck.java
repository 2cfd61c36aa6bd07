package dev.riffle.engine.api;

/**
 * Strict JSON syntax check (RFC 8259) that the text is one object. Validating at the edge gives the caller a
 * clear error naming the position instead of a database error after a round trip; Postgres' jsonb input remains
 * the final judge.
 */
final class JsonObjectCheck {
    private final String s;
    private final String field;
    private int i;
    private int depth;

    private static final int MAX_DEPTH = 512;

    private JsonObjectCheck(String s, String field) {
        this.s = s;
        this.field = field;
    }

    static void requireObject(String text) {
        requireObject(text, "args");
    }

    static void requireObject(String text, String field) {
        JsonObjectCheck c = new JsonObjectCheck(text, field);
        c.ws();
        if (c.i >= text.length() || text.charAt(c.i) != '{') {
            throw new InvalidJobException(field, "must be a JSON object (starting with '{')");
        }
        c.value();
        c.ws();
        if (c.i != text.length()) {
            c.fail("unexpected trailing content");
        }
    }

    private void fail(String what) {
        throw new InvalidJobException(field, "invalid JSON at offset " + i + ": " + what);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                return;
            }
        }
    }

    private char peek() {
        if (i >= s.length()) {
            fail("unexpected end of input");
        }
        return s.charAt(i);
    }

    private void expect(char c) {
        if (peek() != c) {
            fail("expected '" + c + "'");
        }
        i++;
    }

    private void value() {
        ws();
        char c = peek();
        switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    number();
                } else {
                    fail("unexpected character '" + c + "'");
                }
            }
        }
    }

    private void enter() {
        if (++depth > MAX_DEPTH) {
            fail("nesting deeper than " + MAX_DEPTH);
        }
    }

    private void object() {
        enter();
        expect('{');
        ws();
        if (peek() == '}') {
            i++;
            depth--;
            return;
        }
        while (true) {
            ws();
            string();
            ws();
            expect(':');
            value();
            ws();
            char c = peek();
            i++;
            if (c == '}') {
                depth--;
                return;
            }
            if (c != ',') {
                i--;
                fail("expected ',' or '}'");
            }
        }
    }

    private void array() {
        enter();
        expect('[');
        ws();
        if (peek() == ']') {
            i++;
            depth--;
            return;
        }
        while (true) {
            value();
            ws();
            char c = peek();
            i++;
            if (c == ']') {
                depth--;
                return;
            }
            if (c != ',') {
                i--;
                fail("expected ',' or ']'");
            }
        }
    }

    private void string() {
        expect('"');
        while (true) {
            char c = peek();
            i++;
            if (c == '"') {
                return;
            }
            if (c < 0x20) {
                i--;
                fail("control character in string");
            }
            if (c == '\\') {
                char e = peek();
                i++;
                if (e == 'u') {
                    for (int k = 0; k < 4; k++) {
                        char h = peek();
                        boolean hex = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
                        if (!hex) {
                            fail("bad \\u escape");
                        }
                        i++;
                    }
                } else if ("\"\\/bfnrt".indexOf(e) < 0) {
                    i--;
                    fail("bad escape");
                }
            }
        }
    }

    private void literal(String word) {
        if (!s.startsWith(word, i)) {
            fail("expected " + word);
        }
        i += word.length();
    }

    private void number() {
        if (peek() == '-') {
            i++;
        }
        if (peek() == '0') {
            i++;
        } else {
            digits();
        }
        if (i < s.length() && s.charAt(i) == '.') {
            i++;
            digits();
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            i++;
            if (peek() == '+' || peek() == '-') {
                i++;
            }
            digits();
        }
    }

    private void digits() {
        int start = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        if (i == start) {
            fail("expected digit");
        }
    }
}
