package dev.riffle.engine.internal.doctor;

import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.Ring;
import dev.riffle.engine.internal.sql.Db;
import io.r2dbc.spi.Readable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/** Runs {@code doctor(...)} (R__86_doctor.sql) and shapes its rows into a report. */
public final class Doctor {

    private final Db db;
    private final int historySecs;
    private final int failedRetentionSecs;

    /** The doctor of a schema, judging the history floor with the settings prune runs with. */
    public Doctor(Db db, Duration historyRetention, Duration failedRetention) {
        this.db = db;
        this.historySecs = (int) Math.min(Integer.MAX_VALUE, historyRetention.toSeconds());
        this.failedRetentionSecs = (int) Math.min(Integer.MAX_VALUE, failedRetention.toSeconds());
    }

    /** One read-only statement; cold. */
    public Mono<DoctorReport> run() {
        return db.query("doctor", st -> st.bind("$1", historySecs).bind("$2", failedRetentionSecs)
                        .bind("$3", DoctorReport.NAMED_PER_SLOT), Row::of)
                .collectList()
                .map(Doctor::report);
    }

    private record Row(String section, @Nullable String check, @Nullable String ring, @Nullable Integer slot,
                       String detail, @Nullable Long jobId, @Nullable Long runLease) {
        static Row of(Readable r) {
            return new Row(r.get("section", String.class), r.get("check_name", String.class),
                    r.get("ring", String.class), r.get("slot", Integer.class), r.get("detail", String.class),
                    r.get("job_id", Long.class), r.get("run_lease", Long.class));
        }

        @Nullable Ring ringOrNull() {
            return ring == null ? null : parseRing(ring);
        }

        DoctorReport.Attempt attempt() {
            return new DoctorReport.Attempt(parseRing(ring), slot == null ? -1 : slot,
                    jobId == null ? 0 : jobId, runLease == null ? 0 : runLease, detail);
        }
    }

    private static Ring parseRing(@Nullable String name) {
        for (Ring r : Ring.values()) {
            if (r.sqlName().equals(name)) {
                return r;
            }
        }
        throw new IllegalStateException("doctor() named an unknown ring: " + name);
    }

    static DoctorReport report(List<Row> rows) {
        List<DoctorReport.Violation> violations = new ArrayList<>();
        List<DoctorReport.Attempt> open = new ArrayList<>();
        Map<Ring, List<DoctorReport.Attempt>> blockedBy = new EnumMap<>(Ring.class);
        List<Row> prunes = new ArrayList<>();
        for (Row row : rows) {
            switch (row.section()) {
                case "violation" -> violations.add(new DoctorReport.Violation(String.valueOf(row.check()),
                        row.ringOrNull(), row.slot(), row.detail()));
                case "open_attempt" -> open.add(row.attempt());
                case "blocked_by" -> blockedBy.computeIfAbsent(parseRing(row.ring()), k -> new ArrayList<>())
                        .add(row.attempt());
                case "prune" -> prunes.add(row);
                default -> throw new IllegalStateException("doctor() returned an unknown section: " + row.section());
            }
        }
        List<DoctorReport.RingPrune> rings = new ArrayList<>();
        for (Row p : prunes) {
            Ring ring = parseRing(p.ring());
            rings.add(new DoctorReport.RingPrune(ring, p.slot() == null ? -1 : p.slot(), String.valueOf(p.check()),
                    p.detail(), blockedBy.getOrDefault(ring, List.of())));
        }
        return new DoctorReport(violations.isEmpty(), violations, rings, open);
    }
}
