/**
 * A Jackson 3 {@link dev.riffle.engine.api.ArgsCodec} for Riffle: job args as records (or any type Jackson maps)
 * instead of JSON strings. Configure it with
 * {@code RiffleConfig.builder().argsCodec(new JacksonArgsCodec())}; see docs/args-codec.md.
 */
@NullMarked
package dev.riffle.jackson;

import org.jspecify.annotations.NullMarked;
