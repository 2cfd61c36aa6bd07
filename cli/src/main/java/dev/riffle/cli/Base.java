package dev.riffle.cli;

import dev.riffle.admin.AdminJson;
import dev.riffle.engine.Riffle;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import tools.jackson.core.JsonGenerator;

/** What every command shares: the root command's options, the output, an engine for the length of the command. */
abstract class Base implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    /** The root command, which holds the inherited options. */
    RiffleCli root() {
        return (RiffleCli) spec.root().userObject();
    }

    boolean json() {
        return root().json;
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    @Override
    public final Integer call() {
        Riffle riffle = needsEngine() ? root().engine(spec.commandLine()) : null;
        try {
            return run(riffle);
        } finally {
            RiffleCli.close(riffle);
        }
    }

    /** Whether the command works through an engine (all but migrate). */
    boolean needsEngine() {
        return true;
    }

    /** The command; {@code riffle} is null only when {@link #needsEngine()} is false. */
    abstract int run(Riffle riffle);

    /** Writes one JSON document, then a newline. */
    void printJson(JsonBody body) {
        out().println(AdminJson.document(body::write));
    }

    /** Writes a JSON document. */
    @FunctionalInterface
    interface JsonBody {
        void write(JsonGenerator g);
    }
}
