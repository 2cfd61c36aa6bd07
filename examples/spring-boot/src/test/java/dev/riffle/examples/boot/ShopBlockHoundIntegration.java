package dev.riffle.examples.boot;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * BlockHound allowance for this WebFlux app's tests: Jackson 3 builds a deserializer for a type once, under a
 * {@code ReentrantLock} in {@code DeserializerCache}; two first requests decoding the same type at once on two Netty
 * event loops make one of them park briefly (seen as {@code Unsafe#park} from {@code AbstractJacksonDecoder}). That is
 * Jackson's one-time cache fill, not I/O. Picked up through {@code META-INF/services}.
 */
public final class ShopBlockHoundIntegration implements BlockHoundIntegration {

    /** Created by BlockHound's service loader. */
    public ShopBlockHoundIntegration() {}

    @Override
    public void applyTo(BlockHound.Builder builder) {
        builder.allowBlockingCallsInside("tools.jackson.databind.deser.DeserializerCache", "_createAndCacheValueDeserializer");
    }
}
