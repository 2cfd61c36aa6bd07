package dev.riffle.engine.internal.admin;

import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import reactor.core.publisher.Mono;

/** DLQ retention (docs/design/maintenance.md): deletes entries older than the retention, one bounded batch per run. */
public final class DlqRetention {
    private final Db db;
    private final Duration retention;
    private final int batch;

    /** Creates the service. */
    public DlqRetention(Db db, Duration retention, int batch) {
        this.db = db;
        this.retention = retention;
        this.batch = batch;
    }

    /** Deletes one batch; emits how many entries were deleted. */
    public Mono<Long> runOnce() {
        double seconds = retention.toMillis() / 1000.0;
        return db.query("dlq_cleanup", st -> st.bind("$1", seconds).bind("$2", batch), row -> 1).count();
    }
}
