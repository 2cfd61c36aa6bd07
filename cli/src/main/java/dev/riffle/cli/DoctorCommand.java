package dev.riffle.cli;

import dev.riffle.admin.AdminJson;
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
            printJson(g -> AdminJson.doctor(g, report));
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
}
