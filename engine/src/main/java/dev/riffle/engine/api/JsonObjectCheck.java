package dev.riffle.engine.api;

import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.core.exc.StreamConstraintsException;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.core.json.JsonFactoryBuilder;
import tools.jackson.core.json.JsonReadFeature;

/**
 * The one client-side JSON check (docs/adr/0008-json-judged-once.md): the text is exactly one strict RFC 8259 object.
 * It runs while a {@link NewJob}, {@link JobProgress} or callback payload is built, so malformed text fails before
 * anything is sent and cannot abort the caller's transaction in a transactional enqueue. The database stays the judge
 * of what {@code jsonb} can store (<code>&#92;u0000</code>, lone surrogate escapes, numbers beyond {@code numeric});
 * the engine maps those refusals to {@link InvalidJobException} naming the same field.
 */
final class JsonObjectCheck {

    /** Deepest nesting accepted; bounds the work and keeps well below jsonb's own stack limit. */
    static final int MAX_DEPTH = 512;

    private static final JsonFactory STRICT = strictFactory();

    private JsonObjectCheck() {}

    private static JsonFactory strictFactory() {
        JsonFactoryBuilder b = JsonFactory.builder()
                // Args may carry secrets: messages report the offset, never a snippet of the text.
                .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
                // Only depth is ours to bound. Size is maxArgsBytes' job, and Jackson's default token lengths
                // (1000-digit numbers, 50000-char names) would refuse texts that jsonb stores.
                .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
                        .maxNumberLength(Integer.MAX_VALUE).maxNameLength(Integer.MAX_VALUE)
                        .maxStringLength(Integer.MAX_VALUE).build());
        // Every leniency off (comments, single quotes, NaN, trailing commas, leading zeros...), stated here rather
        // than left to whatever a later Jackson release defaults to.
        for (JsonReadFeature f : JsonReadFeature.values()) {
            b.disable(f);
        }
        return b.build();
    }

    /** Throws {@link InvalidJobException} for {@code field} unless {@code text} is one JSON object. */
    static void requireObject(String text, String field) {
        try (JsonParser p = STRICT.createParser(ObjectReadContext.empty(), text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new InvalidJobException(field, "must be a JSON object (starting with '{')");
            }
            try {
                // Reads (and so checks) every token of the object without building anything.
                p.skipChildren();
            } catch (StreamConstraintsException e) {
                // Depth is the only constraint left at a limit. Its error has no position and names Jackson's
                // settings class, so say it in our words, at the token that went one level too deep.
                throw invalid(field, p.currentTokenLocation(), "nested deeper than " + MAX_DEPTH + " levels");
            }
            if (p.nextToken() != null) {
                throw invalid(field, p.currentTokenLocation(), "unexpected content after the object");
            }
        } catch (JacksonException e) {
            throw invalid(field, e.getLocation(), e.getOriginalMessage());
        }
    }

    private static InvalidJobException invalid(String field, TokenStreamLocation at, String what) {
        String where = at == null || at.getCharOffset() < 0 ? "" : " at offset " + at.getCharOffset();
        return new InvalidJobException(field, "invalid JSON" + where + ": " + what);
    }
}
