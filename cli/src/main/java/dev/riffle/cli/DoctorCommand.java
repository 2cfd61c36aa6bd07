package dev.riffle.cli;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DoctorReport;
import picocli.CommandLine.Command;

/** {@code riffle doctor}: the proof doctor; exit code 1 when it finds a violation. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Check the storage invariants on the live schema (read-only) and name what blocks each "
                + "ring's next prune. Exit code 1 when an invariant is violated.")
final class DoctorCommand extends Base {

    @Override
    int run(Riffle riffle) {
        DoctorReport report = riffle.admin().doctor().block(RiffleCli.TIMEOUT);
        if (json()) {
            printJson(g -> {
                g.writeStartObject();
                g.writeBooleanProperty("ok", report.ok());
                g.writeArrayPropertyStart("violations");
                for (DoctorReport.Violation v : report.violations()) {
                    g.writeStartObject();
                    g.writeStringProperty("check", v.check());
                    if (v.ring() != null) {
                        g.writeStringProperty("ring", v.ring().sqlName());
                    }
                    if (v.slot() != null) {
                        g.writeNumberProperty("slot", v.slot());
                    }
                    g.writeStringProperty("detail", v.detail());
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.writeArrayPropertyStart("openAttempts");
                for (DoctorReport.Attempt a : report.openAttempts()) {
                    attempt(g, a);
                }
                g.writeEndArray();
                g.writeArrayPropertyStart("rings");
                for (DoctorReport.RingPrune r : report.rings()) {
                    g.writeStartObject();
                    g.writeStringProperty("ring", r.ring().sqlName());
                    g.writeNumberProperty("slot", r.slot());
                    g.writeStringProperty("state", r.state());
                    g.writeBooleanProperty("blocked", r.blocked());
                    g.writeStringProperty("detail", r.detail());
                    g.writeArrayPropertyStart("blockedBy");
                    for (DoctorReport.Attempt a : r.blockedBy()) {
                        attempt(g, a);
                    }
                    g.writeEndArray();
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.writeEndObject();
            });
        } else {
            out().println(report.ok() ? "doctor: ok, no invariant violated"
                    : "doctor: " + report.violations().size() + " violation(s)");
            for (DoctorReport.Violation v : report.violations()) {
                String where = v.ring() == null ? "" : " " + v.ring().sqlName() + (v.slot() == null ? "" : " slot " + v.slot());
                out().printf("  VIOLATION %s%s: %s%n", v.check(), where, v.detail());
            }
            if (!report.openAttempts().isEmpty()) {
                out().println("open attempts (at most " + DoctorReport.NAMED_PER_SLOT + " per slot):");
                for (DoctorReport.Attempt a : report.openAttempts()) {
                    out().printf("  claim slot %d: job %d, run lease %d%n", a.slot(), a.jobId(), a.runLease());
                }
            }
            out().println("next prune of each ring:");
            for (DoctorReport.RingPrune r : report.rings()) {
                out().printf("  %-5s slot %d: %s — %s%n", r.ring().sqlName(), r.slot(), r.state(), r.detail());
                for (DoctorReport.Attempt a : r.blockedBy()) {
                    out().printf("      job %d, run lease %d: %s%n", a.jobId(), a.runLease(), a.note());
                }
            }
        }
        return report.ok() ? RiffleCli.OK : RiffleCli.FAILED;
    }

    private static void attempt(tools.jackson.core.JsonGenerator g, DoctorReport.Attempt a) {
        g.writeStartObject();
        g.writeStringProperty("ring", a.ring().sqlName());
        g.writeNumberProperty("slot", a.slot());
        g.writeNumberProperty("jobId", a.jobId());
        g.writeNumberProperty("runLease", a.runLease());
        g.writeStringProperty("note", a.note());
        g.writeEndObject();
    }
}
