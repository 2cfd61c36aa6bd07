package dev.riffle.cli;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.RiffleAdmin;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.DlqFilter;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code riffle dlq list|retry|purge}. */
@Command(name = "dlq", mixinStandardHelpOptions = true, description = "The dead-letter queue: list, retry, purge.",
        subcommands = {DlqCommand.ListDlq.class, DlqCommand.Retry.class, DlqCommand.Purge.class})
final class DlqCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing subcommand: list, retry or purge");
    }

    /** {@code riffle dlq list --queue Q}. */
    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "List a queue's DLQ entries by job id, one page at a time.")
    static final class ListDlq extends Base {
        @Option(names = "--queue", required = true, description = "the queue")
        String queue;

        @Option(names = "--after", description = "list entries after this job id (default: from the first)")
        long after;

        @Option(names = "--limit", description = "page size, 1..1000 (default: ${DEFAULT-VALUE})")
        int limit = 100;

        @Override
        int run(Riffle riffle) {
            List<DlqEntry> page = riffle.admin().listDlq(queue, after, limit).collectList().block(RiffleCli.TIMEOUT);
            if (json()) {
                printJson(g -> {
                    g.writeStartArray();
                    for (DlqEntry e : page) {
                        g.writeStartObject();
                        g.writeNumberProperty("jobId", e.jobId());
                        g.writeStringProperty("queue", e.queue());
                        g.writeStringProperty("kind", e.kind());
                        g.writeNumberProperty("attempt", e.attempt());
                        g.writeNumberProperty("runLease", e.runLease());
                        g.writeStringProperty("reason", e.reason());
                        g.writeStringProperty("dlqAt", e.dlqAt().toString());
                        // args and payload are JSON already (stored as jsonb): written as they are
                        g.writeName("args");
                        g.writeRawValue(e.argsJson());
                        if (e.payloadJson() != null) {
                            g.writeName("payload");
                            g.writeRawValue(e.payloadJson());
                        }
                        g.writeEndObject();
                    }
                    g.writeEndArray();
                });
            } else if (page.isEmpty()) {
                out().println("no DLQ entries in queue " + queue + (after > 0 ? " after job " + after : ""));
            } else {
                out().printf("%-12s %-24s %7s  %-30s  %s%n", "JOB_ID", "KIND", "ATTEMPT", "DLQ_AT", "REASON");
                for (DlqEntry e : page) {
                    out().printf("%-12d %-24s %7d  %-30s  %s%n", e.jobId(), e.kind(), e.attempt(), e.dlqAt(), e.reason());
                }
                if (page.size() == limit) {
                    out().println("(more may follow: --after " + page.get(page.size() - 1).jobId() + ")");
                }
            }
            return RiffleCli.OK;
        }
    }

    /** Shared by retry and purge: job ids, or a filter. */
    abstract static class Bulk extends Base {
        @Parameters(arity = "0..*", paramLabel = "JOB_ID", description = "job ids of DLQ entries")
        List<Long> ids = new ArrayList<>();

        @Option(names = "--queue", description = "every entry of this queue (at most " + RiffleAdmin.MAX_PAGE + " per run)")
        @Nullable String queue;

        @Option(names = "--kind", description = "every entry of this kind (with --queue: of both)")
        @Nullable String kind;

        @Option(names = "--all", description = "every entry (at most " + RiffleAdmin.MAX_PAGE + " per run)")
        boolean all;

        abstract String verb();

        abstract boolean one(Riffle riffle, long id);

        abstract List<Long> many(Riffle riffle, DlqFilter filter);

        @Override
        int run(Riffle riffle) {
            boolean filtered = queue != null || kind != null || all;
            if (ids.isEmpty() == !filtered) {
                throw new CommandLine.ParameterException(spec.commandLine(),
                        "Give job ids, or one of --queue, --kind, --all (not both)");
            }
            List<Long> done = new ArrayList<>();
            List<Long> missing = new ArrayList<>();
            if (filtered) {
                done.addAll(many(riffle, all && queue == null && kind == null ? DlqFilter.all()
                        : new DlqFilter(queue, kind, false)));
            } else {
                for (long id : ids) {
                    (one(riffle, id) ? done : missing).add(id);
                }
            }
            if (json()) {
                printJson(g -> {
                    g.writeStartObject();
                    g.writeArrayPropertyStart(verb());
                    for (long id : done) {
                        g.writeNumber(id);
                    }
                    g.writeEndArray();
                    g.writeArrayPropertyStart("notFound");
                    for (long id : missing) {
                        g.writeNumber(id);
                    }
                    g.writeEndArray();
                    g.writeEndObject();
                });
            } else {
                out().printf("%s %d DLQ entr%s%s%n", verb(), done.size(), done.size() == 1 ? "y" : "ies",
                        done.isEmpty() ? "" : ": " + done);
                if (!missing.isEmpty()) {
                    out().println("not in the DLQ: " + missing);
                }
            }
            return missing.isEmpty() ? RiffleCli.OK : RiffleCli.FAILED;
        }
    }

    /** {@code riffle dlq retry}. */
    @Command(name = "retry", mixinStandardHelpOptions = true,
            description = "Move DLQ entries back to their queue (attempt 0). Exit code 1 when a job id is not in the DLQ.")
    static final class Retry extends Bulk {
        @Override
        String verb() {
            return "retried";
        }

        @Override
        boolean one(Riffle riffle, long id) {
            return Boolean.TRUE.equals(riffle.admin().retryDlq(id).block(RiffleCli.TIMEOUT));
        }

        @Override
        List<Long> many(Riffle riffle, DlqFilter filter) {
            return riffle.admin().retryDlq(filter).block(RiffleCli.TIMEOUT);
        }
    }

    /** {@code riffle dlq purge}. */
    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = "Delete DLQ entries for good. Exit code 1 when a job id is not in the DLQ.")
    static final class Purge extends Bulk {
        @Override
        String verb() {
            return "purged";
        }

        @Override
        boolean one(Riffle riffle, long id) {
            return Boolean.TRUE.equals(riffle.admin().purgeDlq(id).block(RiffleCli.TIMEOUT));
        }

        @Override
        List<Long> many(Riffle riffle, DlqFilter filter) {
            return riffle.admin().purgeDlq(filter).block(RiffleCli.TIMEOUT);
        }
    }
}
