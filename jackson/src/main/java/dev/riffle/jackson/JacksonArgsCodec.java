package dev.riffle.jackson;

import dev.riffle.engine.api.ArgsCodec;
import java.util.Objects;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Job args to and from JSON with Jackson 3 ({@code tools.jackson.databind}): records map by their components, other
 * types as Jackson maps them. Jackson 3 lives in its own package, so it sits beside an application's Jackson 2
 * without a clash. Thread-safe (an {@link ObjectMapper} is, once configured).
 *
 * <pre>{@code
 * record Invoice(long orderId, String email) {}
 *
 * RiffleConfig config = RiffleConfig.builder().url(url).argsCodec(new JacksonArgsCodec()).build();
 * riffle.client().enqueue(NewJob.builder("invoice.send").typedArgs(new Invoice(42, "a@b.c")).build());
 * // in the handler:
 * Invoice invoice = job.args(Invoice.class);
 * }</pre>
 */
public final class JacksonArgsCodec implements ArgsCodec {

    private final ObjectMapper mapper;

    /** A codec with a default {@link JsonMapper} (Jackson 3's defaults; records supported out of the box). */
    public JacksonArgsCodec() {
        this(JsonMapper.builder().build());
    }

    /** A codec with the application's own mapper (its modules, naming strategy, date handling). */
    public JacksonArgsCodec(ObjectMapper mapper) {
        this.mapper = Objects.requireNonNull(mapper, "mapper");
    }

    /** The mapper this codec uses. */
    public ObjectMapper mapper() {
        return mapper;
    }

    /**
     * Encodes {@code args} as JSON object text.
     *
     * @throws IllegalArgumentException when {@code args} does not map to a JSON object (an array, a string, a number)
     * @throws tools.jackson.core.JacksonException when Jackson cannot serialize it
     */
    @Override
    public String encode(Object args) {
        JsonNode tree = mapper.valueToTree(Objects.requireNonNull(args, "args"));
        if (tree == null || !tree.isObject()) {
            throw new IllegalArgumentException(args.getClass().getName() + " maps to JSON "
                    + (tree == null ? "null" : tree.getNodeType().name().toLowerCase(java.util.Locale.ROOT))
                    + ", not to an object; job args must be a JSON object");
        }
        return mapper.writeValueAsString(tree);
    }

    /**
     * Decodes JSON object text into a {@code type}.
     *
     * @throws tools.jackson.core.JacksonException when the JSON does not map to {@code type}
     */
    @Override
    public <T> T decode(String json, Class<T> type) {
        return mapper.readValue(Objects.requireNonNull(json, "json"), Objects.requireNonNull(type, "type"));
    }
}
