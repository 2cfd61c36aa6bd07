package dev.riffle.cli;

import dev.riffle.admin.AdminJson;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.JobError;
import dev.riffle.engine.api.JobInfo;
import java.time.Instant;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code riffle job show ID}. */
@Command(name = "job", mixinStandardHelpOptions = true, description = "Look a job up by id.",
        subcommands = {JobCommand.Show.class})
final class JobCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing subcommand: show");
    }

    /** {@code riffle job show ID [--stack]}. */
    @Command(name = "show", mixinStandardHelpOptions = true,
            description = "A job wherever it is (ready, running, scheduled, retryable, terminal history, DLQ): state, "
                    + "attempts, times, progress and error history. Exit code 1 when no such job is found (unknown, "
                    + "or its terminal history pruned).")
    static final class Show extends Base {
        @Parameters(index = "0", paramLabel = "JOB_ID", description = "the job id")
        long id;

        @Option(names = "--stack", description = "print the stack traces of the errors too (JSON always has them)")
        boolean stack;

        @Override
        int run(Riffle riffle) {
            JobInfo job = riffle.admin().job(id).block(RiffleCli.TIMEOUT);
            if (job == null) {
                if (json()) {
                    printJson(g -> {
                        g.writeStartObject();
                        g.writeNumberProperty("id", id);
                        g.writeNullProperty("state");
                        g.writeEndObject();
                    });
                } else {
                    out().println("job " + id + " not found (unknown, or its terminal history was pruned)");
                }
                return RiffleCli.FAILED;
            }
            if (json()) {
                printJson(g -> AdminJson.job(g, job));
                return RiffleCli.OK;
            }
            out().printf("job %d: %s%n", job.id(), AdminJson.state(job.state()));
            out().printf("  kind          %s%n", job.kind());
            out().printf("  queue         %s (priority %d)%n", job.queue(), job.priority());
            out().printf("  attempts      %d of %d (run lease %d)%n", job.attempt(), job.maxAttempts(), job.runLease());
            out().printf("  created       %s%n", job.createdAt());
            line("run at", job.runAt());
            line("attempted", job.attemptedAt());
            line("finalized", job.finalizedAt());
            if (job.dlqReason() != null) {
                out().printf("  dlq reason    %s%n", job.dlqReason());
            }
            out().printf("  args          %s%n", job.argsJson());
            if (job.progressJson() != null) {
                out().printf("  progress      %s%n", job.progressJson());
            }
            if (!job.errors().isEmpty()) {
                out().println("  errors (oldest first):");
                for (JobError e : job.errors()) {
                    out().printf("    attempt %d at %s: %s%s%n", e.attempt(), e.at(), e.message(),
                            e.exceptionClass() == null ? "" : " (" + e.exceptionClass() + ")");
                    if (stack && e.stackTrace() != null) {
                        e.stackTrace().lines().forEach(l -> out().println("      " + l));
                    }
                }
            }
            return RiffleCli.OK;
        }

        private void line(String label, @Nullable Instant at) {
            if (at != null) {
                out().printf("  %-13s %s%n", label, at);
            }
        }
    }
}
