package dev.riffle.cli;

import dev.riffle.engine.Riffle;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code riffle queue pause|resume NAME}. */
@Command(name = "queue", mixinStandardHelpOptions = true, description = "Pause or resume a queue on every engine.",
        subcommands = {QueueCommand.Pause.class, QueueCommand.Resume.class})
final class QueueCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing subcommand: pause or resume");
    }

    /** Shared by pause and resume. */
    abstract static class Toggle extends Base {
        @Parameters(index = "0", paramLabel = "QUEUE", description = "the queue")
        String queue;

        abstract boolean apply(Riffle riffle);

        abstract String changed();

        abstract String unchanged();

        @Override
        int run(Riffle riffle) {
            boolean changed = apply(riffle);
            if (json()) {
                printJson(g -> {
                    g.writeStartObject();
                    g.writeStringProperty("queue", queue);
                    g.writeBooleanProperty("changed", changed);
                    g.writeEndObject();
                });
            } else {
                out().println("queue " + queue + " " + (changed ? changed() : unchanged()));
            }
            return RiffleCli.OK;
        }
    }

    /** {@code riffle queue pause NAME}. */
    @Command(name = "pause", mixinStandardHelpOptions = true,
            description = "Stop claims and promotion of the queue on every engine; enqueues are still accepted.")
    static final class Pause extends Toggle {
        @Override
        boolean apply(Riffle riffle) {
            return Boolean.TRUE.equals(riffle.admin().pauseQueue(queue).block(RiffleCli.TIMEOUT));
        }

        @Override
        String changed() {
            return "paused";
        }

        @Override
        String unchanged() {
            return "was paused already";
        }
    }

    /** {@code riffle queue resume NAME}. */
    @Command(name = "resume", mixinStandardHelpOptions = true, description = "Resume a paused queue.")
    static final class Resume extends Toggle {
        @Override
        boolean apply(Riffle riffle) {
            return Boolean.TRUE.equals(riffle.admin().resumeQueue(queue).block(RiffleCli.TIMEOUT));
        }

        @Override
        String changed() {
            return "resumed";
        }

        @Override
        String unchanged() {
            return "was not paused";
        }
    }
}
