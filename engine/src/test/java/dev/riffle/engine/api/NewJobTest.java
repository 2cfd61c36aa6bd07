package dev.riffle.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.time.Instant;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class NewJobTest {

    private static InvalidJobException rejected(Consumer<NewJob.Builder> customise) {
        NewJob.Builder b = NewJob.builder("send_email");
        customise.accept(b);
        InvalidJobException e = catchThrowableOfType(InvalidJobException.class, b::build);
        assertThat(e).as("build() should have rejected the input").isNotNull();
        return e;
    }

    private static void assertRejectedArgs(String json) {
        assertThat(rejected(b -> b.args(json)).field()).as("field for args %s", json).isEqualTo("args");
    }

    private static NewJob withArgs(String json) {
        return NewJob.builder("k").args(json).build();
    }

    @Test
    void typedArgsReplaceJsonArgsUntilTheEngineEncodesThem() {
        NewJob typed = NewJob.builder("k").args("{\"a\":1}").typedArgs(new Order(7)).build();
        assertThat(typed.argsJson()).isNull();
        assertThat(typed.typedArgs()).isEqualTo(new Order(7));
        NewJob encoded = typed.encodeArgs(new OrderCodec());
        assertThat(encoded.argsJson()).isEqualTo("{\"id\":7}");
        assertThat(encoded.typedArgs()).isNull();
        assertThat(NewJob.builder("k").typedArgs(new Order(1)).args("{}").build().typedArgs())
                .as("the last args setter wins").isNull();
    }

    @Test
    void typedArgsMustBeAnObjectAndNotBothForms() {
        assertThat(catchThrowableOfType(InvalidJobException.class, () -> NewJob.builder("k").typedArgs(null)).field())
                .isEqualTo("args");
        assertThat(catchThrowableOfType(InvalidJobException.class, () -> NewJob.builder("k").typedArgs("{}")).getMessage())
                .contains("args(String)");
        assertThat(catchThrowableOfType(InvalidJobException.class,
                () -> new NewJob("k", "q", "{}", 2, 1, null, new Object(), null)).getMessage()).contains("not both");
        InvalidJobException bad = catchThrowableOfType(InvalidJobException.class,
                () -> NewJob.builder("k").typedArgs(new Object()).build().encodeArgs(new OrderCodec() {
                    @Override
                    public String encode(Object args) {
                        throw new IllegalStateException("cannot");
                    }
                }));
        assertThat(bad.field()).isEqualTo("args");
        assertThat(bad.getMessage()).contains("cannot");
    }

    @Test
    void builderDefaults() {
        NewJob job = NewJob.builder("send_email").build();

        assertThat(job.kind()).isEqualTo("send_email");
        assertThat(job.queue()).isEqualTo("default").isEqualTo(NewJob.DEFAULT_QUEUE);
        assertThat(job.priority()).isEqualTo(2).isEqualTo(NewJob.DEFAULT_PRIORITY);
        assertThat(job.maxAttempts()).isEqualTo(25).isEqualTo(NewJob.DEFAULT_MAX_ATTEMPTS);
        assertThat(job.argsJson()).isEqualTo("{}");
        assertThat(job.runAt()).isNull();
    }

    @Test
    void builderCarriesEveryField() {
        Instant at = Instant.parse("2030-05-06T07:08:09Z");
        NewJob job = NewJob.builder("k").queue("q").args("{\"a\":1}").priority(4).maxAttempts(1).runAt(at).build();

        assertThat(job).isEqualTo(new NewJob("k", "q", "{\"a\":1}", 4, 1, at));
    }

    // ---- names (kind and queue share one rule) ----

    static Stream<String> badNames() {
        return Stream.of("", "a".repeat(NewJob.MAX_NAME_LENGTH + 1), "has space", "a/b", "caf\u00e9", "\u00e9t\u00e9",
                ".hidden", "-dash", "_under", ":colon", "tab\there", "new\nline", "semi;colon", "quote'", "a*");
    }

    @ParameterizedTest
    @MethodSource("badNames")
    void badQueueNameIsRejectedAsQueue(String name) {
        assertThat(rejected(b -> b.queue(name)).field()).isEqualTo("queue");
    }

    @ParameterizedTest
    @MethodSource("badNames")
    void badKindIsRejectedAsKind(String name) {
        InvalidJobException e = catchThrowableOfType(InvalidJobException.class, () -> NewJob.builder(name).build());
        assertThat(e).isNotNull();
        assertThat(e.field()).isEqualTo("kind");
    }

    @Test
    void nullQueueIsRejectedAsQueue() {
        assertThat(rejected(b -> b.queue(null)).field()).isEqualTo("queue");
    }

    @Test
    void nullKindIsRejectedAsKindByTheConstructor() {
        InvalidJobException e = catchThrowableOfType(InvalidJobException.class,
                () -> new NewJob(null, "q", "{}", 2, 25, null));
        assertThat(e).isNotNull();
        assertThat(e.field()).isEqualTo("kind");
    }

    @Test
    void nullKindIsRejectedAsKindByTheBuilder() {
        InvalidJobException e = catchThrowableOfType(InvalidJobException.class, () -> NewJob.builder(null).build());
        assertThat(e).isNotNull();
        assertThat(e.field()).isEqualTo("kind");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a", "0", "Z9", "billing.v2:export-csv_daily", "7-eleven"})
    void goodNamesPass(String name) {
        NewJob job = NewJob.builder(name).queue(name).build();
        assertThat(job.kind()).isEqualTo(name);
        assertThat(job.queue()).isEqualTo(name);
    }

    @Test
    void longestNamePasses() {
        String longest = "q".repeat(NewJob.MAX_NAME_LENGTH);
        assertThat(NewJob.builder(longest).queue(longest).build().queue()).hasSize(128);
    }

    @Test
    void overlongNameIsAbbreviatedInTheMessage() {
        String name = "x".repeat(5000);
        assertThat(rejected(b -> b.queue(name)).getMessage()).hasSizeLessThan(400).startsWith("queue: ");
    }

    // ---- args ----

    @Test
    void nullArgsIsRejected() {
        assertRejectedArgs(null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"[]", "\"x\"", "1", "null", "true", "", "   ", "[{}]", "-1"})
    void nonObjectArgsAreRejected(String json) {
        assertRejectedArgs(json);
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "{\"a\":}",                // missing value
            "{\"a\":1,}",              // trailing comma in object
            "{'a':1}",                 // single quotes
            "{a:1}",                   // bare key
            "{\"a\" 1}",               // missing colon
            "{\"a\":1 \"b\":2}",       // missing comma
            "{} x",                    // trailing garbage
            "{}{}",                    // two values
            "{}]",                     // stray closer
            "{\"a\":\"b}",             // unterminated string
            "{\"a\":\"b",              // unterminated string at end
            "{\"a\":1",                // unterminated object
            "{",                       // just an opener
            "{\"a\":[1,2}",            // mismatched closer
            "{\"a\":[1,]}",            // trailing comma in array
            "{\"a\":[1 2]}",           // missing comma in array
            "{\"a\":\"\\x\"}",         // bad escape
            "{\"a\":\"\\\"}",          // escape eats the closing quote
            "{\"a\":\"\\u12G4\"}",     // bad hex digit
            "{\"a\":\"\\u12\"}",       // short unicode escape
            "{\"a\":\"\u0001\"}",      // raw control character
            "{\"a\":\"line\nbreak\"}", // raw newline inside a string
            "{\"a\":\"tab\there\"}",   // raw tab inside a string
            "{\"a\":01}",              // leading zero
            "{\"a\":-01}",             // leading zero after minus
            "{\"a\":00}",              // double zero
            "{\"a\":+1}",              // plus sign
            "{\"a\":.5}",              // no integer part
            "{\"a\":1.}",              // no fraction digits
            "{\"a\":1e}",              // no exponent digits
            "{\"a\":1e+}",             // no exponent digits after sign
            "{\"a\":-}",               // lone minus
            "{\"a\":0x10}",            // hex literal
            "{\"a\":NaN}",             // not JSON
            "{\"a\":Infinity}",        // not JSON
            "{\"a\":tru}",             // truncated literal
            "{\"a\":nul}",             // truncated literal
            "{\"a\":True}",            // wrong case
            "{\"a\":truex}",           // literal followed by junk
            "{\"a\":undefined}",       // not JSON
            "{\"a\":1}\f",             // form feed is not JSON whitespace
            "\u00a0{}",                // nor is a no-break space
            "{,}",                     // comma without members
            "{\"a\":1,,\"b\":2}",      // double comma
            "{1:2}",                   // non-string key
    })
    void invalidJsonIsRejected(String json) {
        assertRejectedArgs(json);
    }

    @Test
    void invalidJsonMessageNamesTheOffset() {
        assertThat(rejected(b -> b.args("{\"a\":01}")).getMessage()).contains("offset 6");
    }

    @Test
    void invalidJsonMessageSaysWhatIsWrongWithoutQuotingTheText() {
        // The text may hold secrets: the message gives a position and the parser's reason, never a snippet.
        assertThat(rejected(b -> b.args("{\"secret\":\"s3cr3t\",}")).getMessage())
                .startsWith("args: invalid JSON at offset 19: ").contains("property name").doesNotContain("s3cr3t");
        assertThat(rejected(b -> b.args("{\"a\":1} {}")).getMessage())
                .isEqualTo("args: invalid JSON at offset 8: unexpected content after the object");
        assertThat(rejected(b -> b.args("[1]")).getMessage()).isEqualTo("args: must be a JSON object (starting with '{')");
    }

    @Test
    void tooDeepNestingIsReportedInOurWordsAtTheTokenThatWentTooDeep() {
        // {"a": then 512 opening brackets: the last one (offset 5 + 511) is level 513.
        assertThat(rejected(b -> b.args(objectWithNestedArrays(513))).getMessage())
                .isEqualTo("args: invalid JSON at offset 516: nested deeper than 512 levels");
    }

    @Test
    void longTokensThatJsonbStoresPass() {
        // Jackson's defaults refuse numbers over 1000 digits and names over 50000 characters; jsonb stores both,
        // and size is the engine's maxArgsBytes to judge, so the check must not be stricter here.
        assertThatCode(() -> withArgs("{\"n\":" + "9".repeat(5000) + "}")).doesNotThrowAnyException();
        assertThatCode(() -> withArgs("{\"" + "k".repeat(60_000) + "\":1}")).doesNotThrowAnyException();
    }

    @Test
    void whatOnlyJsonbRefusesIsLeftToTheDatabase() {
        // Valid JSON that jsonb cannot store: the one check does not pre-judge it (ValidationIT shows the database
        // refusing it, mapped to the same field).
        assertThatCode(() -> withArgs("{\"a\":\"\\u0000\"}")).doesNotThrowAnyException();
        assertThatCode(() -> withArgs("{\"a\":1e1000000}")).doesNotThrowAnyException();
        assertThatCode(() -> withArgs("{\"a\":\"\\ud800\"}")).doesNotThrowAnyException();
    }

    private static String nestedObjects(int depth) {
        return "{\"a\":".repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
    }

    private static String objectWithNestedArrays(int depth) {
        return "{\"a\":" + "[".repeat(depth - 1) + "]".repeat(depth - 1) + "}";
    }

    @Test
    void nestingUpTo512Passes() {
        assertThatCode(() -> withArgs(nestedObjects(512))).doesNotThrowAnyException();
        assertThatCode(() -> withArgs(objectWithNestedArrays(512))).doesNotThrowAnyException();
    }

    @Test
    void nestingOver512IsRejected() {
        assertRejectedArgs(nestedObjects(513));
        assertRejectedArgs(objectWithNestedArrays(513));
    }

    @Test
    void absurdNestingIsRejectedWithoutOverflowingTheStack() {
        assertRejectedArgs("{\"a\":" + "[".repeat(200_000));
    }

    static Stream<Arguments> validObjects() {
        return Stream.of(
                "{}",
                " \t\r\n{ } \n",
                "{\"a\":1}",
                "{\"\":\"\"}",
                "{\"a\":[1,[2,[3,[]]],{\"b\":[{}]}]}",
                "{\"nums\":[0,-0,1,-1,0.5,-0.25,1e3,1E3,1e+3,1e-3,-1.5E-10,123456789012345678901234567890]}",
                "{\"s\":\"plain\",\"esc\":\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"}",
                "{\"u\":\"\\u00e9\\u20AC\\uD83D\\uDE00\"}",
                "{\"raw\":\"caf\u00e9 \u65e5\u672c \uD83D\uDE00\",\"del\":\"\u007f\"}",
                "{\"t\":true,\"f\":false,\"n\":null}",
                "{\"dup\":1,\"dup\":2}",
                "{ \"a\" : [ 1 , 2 ] , \"b\" : { \"c\" : null } }"
        ).map(Arguments::of);
    }

    @ParameterizedTest
    @MethodSource("validObjects")
    void validJsonObjectsPass(String json) {
        assertThat(withArgs(json).argsJson()).isEqualTo(json);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{\"a\":\"\\u\u0663\u0663\u0663\u0663\"}", "{\"a\":\"\\u\uff41\uff41\uff41\uff41\"}"})
    void unicodeEscapeAcceptsOnlyAsciiHexDigits(String json) {
        assertRejectedArgs(json);
    }

    // ---- numbers and times ----

    @ParameterizedTest
    @ValueSource(ints = {0, 5, -1, Integer.MIN_VALUE, Integer.MAX_VALUE})
    void priorityOutOfRange(int priority) {
        assertThat(rejected(b -> b.priority(priority)).field()).isEqualTo("priority");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4})
    void priorityInRange(int priority) {
        assertThat(NewJob.builder("k").priority(priority).build().priority()).isEqualTo(priority);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1001, -5})
    void maxAttemptsOutOfRange(int maxAttempts) {
        assertThat(rejected(b -> b.maxAttempts(maxAttempts)).field()).isEqualTo("maxAttempts");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1000})
    void maxAttemptsBoundsPass(int maxAttempts) {
        assertThat(NewJob.builder("k").maxAttempts(maxAttempts).build().maxAttempts()).isEqualTo(maxAttempts);
    }

    @ParameterizedTest
    @ValueSource(strings = {"1999-12-31T23:59:59Z", "1999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z",
            "2300-01-01T00:00:00Z", "2200-01-01T00:00:00.001Z", "2200-01-01T00:00:00Z"})
    void runAtOutsideTheSaneWindowIsRejected(String at) {
        // Half-open, as the database's CHECK: 2200-01-01 itself is out.
        assertThat(rejected(b -> b.runAt(Instant.parse(at))).field()).isEqualTo("runAt");
    }

    @ParameterizedTest
    @ValueSource(strings = {"2000-01-01T00:00:00Z", "2024-02-29T12:00:00Z", "2199-12-31T23:59:59.999999Z"})
    void runAtInsideTheWindowPasses(String at) {
        assertThat(NewJob.builder("k").runAt(Instant.parse(at)).build().runAt()).isEqualTo(Instant.parse(at));
    }

    @Test
    void runAtInTheSecondsVersusMillisTrapIsRejected() {
        // A millisecond timestamp fed to ofEpochSecond lands tens of thousands of years out.
        long millis = Instant.parse("2030-01-01T00:00:00Z").toEpochMilli();
        assertThat(rejected(b -> b.runAt(Instant.ofEpochSecond(millis))).field()).isEqualTo("runAt");
    }

    @Test
    void messageStartsWithTheField() {
        InvalidJobException e = rejected(b -> b.priority(9));
        assertThat(e.getMessage()).startsWith("priority: ").contains("9");
        assertThat(e).isInstanceOf(RiffleException.class);
    }

    private record Order(long id) {}

    /** A codec for {@code Order} only: {"id":N} both ways. */
    private static class OrderCodec implements ArgsCodec {
        @Override
        public String encode(Object args) {
            return "{\"id\":" + ((Order) args).id() + "}";
        }

        @Override
        public <T> T decode(String json, Class<T> type) {
            String digits = json.replaceAll("[^0-9-]", "");
            return type.cast(new Order(Long.parseLong(digits)));
        }
    }
}
