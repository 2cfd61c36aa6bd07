package dev.riffle.admin;

import dev.riffle.engine.api.DoctorReport;
import dev.riffle.engine.api.JobError;
import dev.riffle.engine.api.JobInfo;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.api.RingStatus;
import java.io.StringWriter;
import java.time.Instant;
import java.util.Locale;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.json.JsonFactory;

/**
 * The JSON shapes of the admin API (docs/dashboard.md#endpoints), written with Jackson's streaming generator: the HTTP
 * endpoints answer with them and the command line's {@code --json} output uses the same ones, so a script can move
 * between the two. Field names are camelCase; states are lower case ({@code dlq}, {@code waiting_external}); times are
 * ISO-8601 instants; a job's args and progress are the stored JSON, written as they are.
 */
public final class AdminJson {

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private AdminJson() {}

    /** One JSON document written by {@code body}, as a string. */
    public static String document(Consumer<JsonGenerator> body) {
        StringWriter w = new StringWriter();
        try (JsonGenerator g = JSON.createGenerator(w)) {
            body.accept(g);
        }
        return w.toString();
    }

    /** The schema's word for a state, as every endpoint writes and reads it. */
    public static String state(dev.riffle.engine.api.JobState state) {
        return state.name().toLowerCase(Locale.ROOT);
    }

    /**
     * A job: id, state, kind, queue, priority, attempt, maxAttempts, runLease, the times, args, progress, dlqReason and
     * its errors, oldest first (attempt, at, message, exceptionClass, stackTrace).
     */
    public static void job(JsonGenerator g, JobInfo job) {
        g.writeStartObject();
        g.writeNumberProperty("id", job.id());
        g.writeStringProperty("state", state(job.state()));
        g.writeStringProperty("kind", job.kind());
        g.writeStringProperty("queue", job.queue());
        g.writeNumberProperty("priority", job.priority());
        g.writeNumberProperty("attempt", job.attempt());
        g.writeNumberProperty("maxAttempts", job.maxAttempts());
        g.writeNumberProperty("runLease", job.runLease());
        instant(g, "runAt", job.runAt());
        instant(g, "createdAt", job.createdAt());
        instant(g, "attemptedAt", job.attemptedAt());
        instant(g, "finalizedAt", job.finalizedAt());
        g.writeName("args");
        g.writeRawValue(job.argsJson());
        g.writeName("progress");
        if (job.progressJson() == null) {
            g.writeNull();
        } else {
            g.writeRawValue(job.progressJson());
        }
        string(g, "dlqReason", job.dlqReason());
        g.writeArrayPropertyStart("errors");
        for (JobError e : job.errors()) {
            g.writeStartObject();
            g.writeNumberProperty("attempt", e.attempt());
            g.writeStringProperty("at", e.at().toString());
            g.writeStringProperty("message", e.message());
            string(g, "exceptionClass", e.exceptionClass());
            string(g, "stackTrace", e.stackTrace());
            g.writeEndObject();
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    /**
     * Starts a queue's object with its counts: queue, available, inFlight, scheduled, completed, paused. The object is
     * left open for the caller's own fields (the HTTP table adds dlq and rates); the caller ends it.
     */
    public static void startQueueCounts(JsonGenerator g, QueueCounts q) {
        g.writeStartObject();
        g.writeStringProperty("queue", q.queue());
        g.writeNumberProperty("available", q.available());
        g.writeNumberProperty("inFlight", q.inFlight());
        g.writeNumberProperty("scheduled", q.scheduled());
        g.writeNumberProperty("completed", q.completed());
        g.writeBooleanProperty("paused", q.paused());
    }

    /** A ring's cursors: ring, currentSlot, generation, slotCount, sealedSlots (oldest first). */
    public static void ring(JsonGenerator g, RingStatus r) {
        g.writeStartObject();
        g.writeStringProperty("ring", r.ring().sqlName());
        g.writeNumberProperty("currentSlot", r.currentSlot());
        g.writeNumberProperty("generation", r.generation());
        g.writeNumberProperty("slotCount", r.slotCount());
        g.writeArrayPropertyStart("sealedSlots");
        for (int s : r.sealedSlots()) {
            g.writeNumber(s);
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    /**
     * The proof doctor's report: ok, violations (check, ring, slot, detail), openAttempts and rings (ring, slot, state,
     * blocked, detail, blockedBy); an attempt is ring, slot, jobId, runLease, note.
     */
    public static void doctor(JsonGenerator g, DoctorReport report) {
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
    }

    private static void attempt(JsonGenerator g, DoctorReport.Attempt a) {
        g.writeStartObject();
        g.writeStringProperty("ring", a.ring().sqlName());
        g.writeNumberProperty("slot", a.slot());
        g.writeNumberProperty("jobId", a.jobId());
        g.writeNumberProperty("runLease", a.runLease());
        g.writeStringProperty("note", a.note());
        g.writeEndObject();
    }

    /** {@code name}: the instant as ISO-8601, or null. */
    public static void instant(JsonGenerator g, String name, @Nullable Instant at) {
        string(g, name, at == null ? null : at.toString());
    }

    /** {@code name}: the string, or null. */
    public static void string(JsonGenerator g, String name, @Nullable String value) {
        if (value == null) {
            g.writeNullProperty(name);
        } else {
            g.writeStringProperty(name, value);
        }
    }
}
