package dev.riffle.engine.api;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;

/**
 * The one place that knows the cron dialect (docs/adr/0011-cron-parser.md): cron-utils' Spring 5.3 definition
 * (seconds, minutes, hours, day of month, month, day of week; {@code L}, {@code W}, {@code #}, {@code ?}, names,
 * and the {@code @hourly}-style macros), with the seconds field optional: a five-field expression is the classic
 * Unix form and fires at second 0.
 */
final class CronSyntax {

    // CronParser holds only the immutable definition; one instance serves every thread.
    private static final CronParser PARSER = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

    private CronSyntax() {}

    /** Parses {@code expression}; errors with {@link InvalidJobException} (field {@code cron}) when it is not valid. */
    static ExecutionTime executionTime(String expression) {
        return ExecutionTime.forCron(parse(expression));
    }

    static Cron parse(String expression) {
        if (expression == null) {
            throw new InvalidJobException("cron", "must not be null");
        }
        String e = expression.strip();
        String full;
        if (e.startsWith("@")) {
            full = e;
        } else {
            int fields = e.isEmpty() ? 0 : e.split("\\s+").length;
            if (fields == 5) {
                full = "0 " + e;
            } else if (fields == 6) {
                full = e;
            } else {
                throw new InvalidJobException("cron", "'" + expression + "' has " + fields + " fields; expected 5 "
                        + "(minute hour day-of-month month day-of-week) or 6 (with seconds first), or a macro such "
                        + "as @daily");
            }
        }
        try {
            return PARSER.parse(full).validate();
        } catch (IllegalArgumentException ex) {
            throw new InvalidJobException("cron", "'" + expression + "' is not a valid cron expression: "
                    + ex.getMessage(), ex);
        }
    }
}
