package dev.riffle.engine.it;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.internal.close.CompletionBatcher;

/**
 * White-box access for tests that must drive the completion batcher with receipts no public call can produce (forged
 * or duplicated ones). The engine does not expose its machinery (ArchitectureTest), so this reads the field.
 */
final class Internals {
    private Internals() {}

    static CompletionBatcher completer(Riffle riffle) {
        try {
            var field = Riffle.class.getDeclaredField("completer");
            field.setAccessible(true);
            return (CompletionBatcher) field.get(riffle);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Riffle has no field 'completer' any more; update this test helper", e);
        }
    }
}
