package dev.riffle.engine.internal.offenderone;

import dev.riffle.engine.RiffleStats;
import dev.riffle.engine.internal.offendertwo.CycleEnd;

/** Deliberate offender (test classes only): closes a package cycle with {@link CycleEnd} and reads a facade type. */
public final class CycleStart {
    /** Depends on the other package. */
    public CycleEnd next() {
        return new CycleEnd();
    }

    /** Depends on the facade. */
    public long claimed(RiffleStats stats) {
        return stats.claimedJobs();
    }
}
