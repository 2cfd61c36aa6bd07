package dev.riffle.engine.internal.tracing;

import java.io.StringWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.ObjectWriteContext;
import tools.jackson.core.json.JsonFactory;

/**
 * The trace context as it is stored with a job: the propagation fields a tracer wrote at enqueue (W3C
 * {@code traceparent}, {@code tracestate}, or whatever its propagator uses) as one JSON object of strings, kept in
 * the job's engine-owned payload under {@value #PAYLOAD_FIELD}. Free of Micrometer types.
 */
final class TraceCarrier {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.tracing");
    private static final JsonFactory JSON = JsonFactory.builder().build();

    /** The payload field holding the carrier (R__20_enqueue.sql, place_new_jobs). */
    static final String PAYLOAD_FIELD = "trace";

    private TraceCarrier() {}

    /** {@code fields} as a JSON object, or null when empty (nothing to propagate, nothing stored). */
    static @Nullable String toJson(Map<String, String> fields) {
        if (fields.isEmpty()) {
            return null;
        }
        StringWriter out = new StringWriter();
        try (JsonGenerator g = JSON.createGenerator(ObjectWriteContext.empty(), out)) {
            g.writeStartObject();
            for (Map.Entry<String, String> e : fields.entrySet()) {
                g.writeStringProperty(e.getKey(), e.getValue());
            }
            g.writeEndObject();
        }
        return out.toString();
    }

    /**
     * The carrier stored in a job's payload (its {@value #PAYLOAD_FIELD} object's string fields), empty when the
     * payload has none. Never throws: an unreadable payload propagates nothing.
     */
    static Map<String, String> fromPayload(@Nullable String payloadJson) {
        Map<String, String> fields = new LinkedHashMap<>();
        // Cheap test first: most payloads (none, or errors and progress only) carry no trace.
        if (payloadJson == null || !payloadJson.contains("\"" + PAYLOAD_FIELD + "\"")) {
            return fields;
        }
        try (JsonParser p = JSON.createParser(ObjectReadContext.empty(), payloadJson)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return fields;
            }
            while (p.nextToken() == JsonToken.PROPERTY_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (PAYLOAD_FIELD.equals(name) && value == JsonToken.START_OBJECT) {
                    while (p.nextToken() == JsonToken.PROPERTY_NAME) {
                        String key = p.currentName();
                        if (p.nextToken() == JsonToken.VALUE_STRING) {
                            fields.put(key, p.getString());
                        } else {
                            p.skipChildren();
                        }
                    }
                    return fields;
                }
                p.skipChildren();
            }
        } catch (JacksonException e) {
            log.debug("job payload unreadable, no trace context propagated: {}", e.toString());
            fields.clear();
        }
        return fields;
    }
}
