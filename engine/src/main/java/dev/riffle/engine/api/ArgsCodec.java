package dev.riffle.engine.api;

/**
 * Maps job arguments between Java objects and the JSON object text Riffle stores (SPI). Configure one with
 * {@code RiffleConfig.Builder.argsCodec(...)}; then {@link NewJob.Builder#typedArgs(Object)} takes an object, encoded at
 * enqueue, and {@link Job#args(Class)} decodes a delivered job's arguments. The JSON-string API
 * ({@link NewJob.Builder#args(String)}, {@link Job#argsJson()}) works with or without a codec. The
 * {@code dev.riffle:riffle-jackson} module provides a Jackson-based one ({@code dev.riffle.jackson.JacksonArgsCodec})
 * that maps records (docs/args-codec.md).
 *
 * <p>Implementations must be thread-safe and must not block: {@code encode} runs on the enqueuing thread and
 * {@code decode} on the handler's.
 */
public interface ArgsCodec {

    /**
     * Encodes {@code args} as JSON object text (the stored {@code args} must be a JSON object).
     *
     * @throws RuntimeException when it cannot; enqueue then fails with {@link InvalidJobException} for {@code args}
     *     and nothing is written
     */
    String encode(Object args);

    /**
     * Decodes JSON object text into a {@code type}.
     *
     * @throws RuntimeException when it cannot; {@link Job#args(Class)} reports it as an
     *     {@link IllegalArgumentException} naming the job
     */
    <T> T decode(String json, Class<T> type);
}
