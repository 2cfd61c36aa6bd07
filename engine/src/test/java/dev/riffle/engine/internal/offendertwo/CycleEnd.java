package dev.riffle.engine.internal.offendertwo;

import dev.riffle.engine.internal.offenderone.CycleStart;

/** Deliberate offender (test classes only): the other half of a package cycle. */
public final class CycleEnd {
    /** Depends back on the first package. */
    public CycleStart back() {
        return new CycleStart();
    }
}
