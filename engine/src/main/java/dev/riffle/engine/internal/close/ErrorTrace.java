package dev.riffle.engine.internal.close;

import dev.riffle.engine.api.JobError;
import java.io.PrintWriter;
import java.io.Writer;
import org.jspecify.annotations.Nullable;

/**
 * The exception of a failed attempt as the error history stores it: class name and stack trace, the trace cut to
 * {@link JobError#MAX_STACK_TRACE} characters while it is printed (a deep cause chain is never rendered whole). The
 * schema cuts it again ({@code max_error_trace()}), so the bound holds whatever an engine sends.
 */
final class ErrorTrace {
    private ErrorTrace() {}

    static @Nullable String className(@Nullable Throwable cause) {
        return cause == null ? null : cause.getClass().getName();
    }

    static @Nullable String render(@Nullable Throwable cause) {
        if (cause == null) {
            return null;
        }
        Bounded out = new Bounded(JobError.MAX_STACK_TRACE);
        try (PrintWriter w = new PrintWriter(out)) {
            cause.printStackTrace(w);
        } catch (RuntimeException e) {
            // A Throwable whose toString or getStackTrace throws: keep what was printed.
        }
        return out.text();
    }

    /** A writer that keeps the first {@code limit} characters and drops the rest. */
    private static final class Bounded extends Writer {
        private final StringBuilder sb = new StringBuilder();
        private final int limit;

        Bounded(int limit) {
            this.limit = limit;
        }

        @Override
        public void write(char[] cbuf, int off, int len) {
            int room = limit - sb.length();
            if (room > 0) {
                sb.append(cbuf, off, Math.min(room, len));
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}

        String text() {
            return sb.toString();
        }
    }
}
