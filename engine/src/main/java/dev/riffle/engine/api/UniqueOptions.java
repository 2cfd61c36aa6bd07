package dev.riffle.engine.api;

import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Makes a job unique (docs/unique-jobs.md): while a job with the same key is in one of {@link #states()}, enqueueing
 * another returns that job's id flagged as a duplicate ({@link EnqueueResult#duplicate()}) instead of creating a
 * second job. Build with {@link #byQueue()}, {@link #byArgs(String...)} or {@link #byKey(String)}, then optionally
 * {@link #period(Duration)} and {@link #states(State...)}.
 *
 * <p>The key is always scoped to the job's kind, and is either
 * <ul>
 *   <li>the queue (and, with {@code byArgs}, the whole args or the named top-level fields of the args), or</li>
 *   <li>an explicit key string ({@link #byKey(String)}), which replaces queue and args.</li>
 * </ul>
 * With a period, the key also holds the database clock's time bucket {@code floor(now / period)}: at most one job per
 * key per bucket. The database computes the key (SHA-256 of a canonical JSON form: args field order does not matter;
 * numbers compare as written, {@code 1} and {@code 1.0} differ; a missing field and a null field differ).
 *
 * @param argsFields null: args are not part of the key; empty: the whole args; else these top-level fields
 * @param key an explicit key (1..{@value #MAX_KEY_LENGTH} characters, no control characters), or null
 * @param period the bucket length (at least {@link #MIN_PERIOD}, whole milliseconds), or null for no period
 * @param states the states in which the job holds its key: a non-empty subset of {@link State} (default: all four)
 */
public record UniqueOptions(@Nullable List<String> argsFields, @Nullable String key, @Nullable Duration period,
                            Set<State> states) {

    /** Longest explicit key or args field name. */
    public static final int MAX_KEY_LENGTH = 512;
    /** Most args fields in a key. */
    public static final int MAX_FIELDS = 32;
    /** Shortest period: 1 second. */
    public static final Duration MIN_PERIOD = Duration.ofSeconds(1);
    /** Longest period: 3660 days. */
    public static final Duration MAX_PERIOD = Duration.ofDays(3660);

    private static final Pattern CONTROL = Pattern.compile("\\p{Cntrl}");

    /**
     * The states in which a job holds its key. The key is released when the job leaves them: completed, failed,
     * cancelled, moved to the DLQ, or pruned - or moved to a state left out of the set (for example, without
     * {@link #RUNNING}, a job releases its key when it is claimed).
     */
    public enum State {
        /** Waiting for a future run time (not yet due). */
        SCHEDULED,
        /** Ready to be claimed. */
        AVAILABLE,
        /** Claimed and running (including waiting for an external callback). */
        RUNNING,
        /** Waiting for a retry after a failed attempt. */
        RETRYABLE
    }

    /** Validates and freezes. */
    public UniqueOptions {
        if (key != null && argsFields != null) {
            throw new InvalidJobException("unique", "an explicit key replaces queue and args: set byKey or byArgs, not both");
        }
        if (key != null) {
            checkText("unique.key", key);
        }
        if (argsFields != null) {
            if (argsFields.size() > MAX_FIELDS) {
                throw new InvalidJobException("unique.argsFields", "at most " + MAX_FIELDS + " fields, got " + argsFields.size());
            }
            for (String f : argsFields) {
                if (f == null) {
                    throw new InvalidJobException("unique.argsFields", "must not contain null");
                }
                checkText("unique.argsFields", f);
            }
            argsFields = List.copyOf(argsFields);
        }
        if (period != null) {
            if (period.compareTo(MIN_PERIOD) < 0 || period.compareTo(MAX_PERIOD) > 0) {
                throw new InvalidJobException("unique.period", "must be between " + MIN_PERIOD + " and " + MAX_PERIOD
                        + ", got " + period);
            }
            if (period.getNano() % 1_000_000 != 0) {
                throw new InvalidJobException("unique.period", "must be whole milliseconds, got " + period);
            }
        }
        if (states == null || states.isEmpty()) {
            throw new InvalidJobException("unique.states", "must name at least one state");
        }
        for (State s : states) {
            if (s == null) {
                throw new InvalidJobException("unique.states", "must not contain null");
            }
        }
        states = Set.copyOf(EnumSet.copyOf(states));
    }

    private static void checkText(String field, String s) {
        if (s.isEmpty() || s.length() > MAX_KEY_LENGTH) {
            throw new InvalidJobException(field, "must be 1.." + MAX_KEY_LENGTH + " characters, got " + s.length());
        }
        if (CONTROL.matcher(s).find()) {
            throw new InvalidJobException(field, "must not contain control characters");
        }
    }

    /** Unique per kind and queue: at most one live job of this kind in this queue. */
    public static UniqueOptions byQueue() {
        return new UniqueOptions(null, null, null, EnumSet.allOf(State.class));
    }

    /**
     * Unique per kind, queue and args: the whole args when no field is named, else the named top-level fields only
     * (a field absent from the args is left out of the key).
     */
    public static UniqueOptions byArgs(String... fields) {
        if (fields == null) {
            throw new InvalidJobException("unique.argsFields", "must not be null");
        }
        return new UniqueOptions(List.of(fields.clone()), null, null, EnumSet.allOf(State.class));
    }

    /** Unique per kind and this explicit key, whatever the queue and args. */
    public static UniqueOptions byKey(String key) {
        if (key == null) {
            throw new InvalidJobException("unique.key", "must not be null");
        }
        return new UniqueOptions(null, key, null, EnumSet.allOf(State.class));
    }

    /** The same key, unique per time bucket of this length (database clock). */
    public UniqueOptions period(Duration period) {
        if (period == null) {
            throw new InvalidJobException("unique.period", "must not be null");
        }
        return new UniqueOptions(argsFields, key, period, states);
    }

    /** The same key, held only while the job is in one of these states. */
    public UniqueOptions states(State... states) {
        if (states == null || states.length == 0) {
            throw new InvalidJobException("unique.states", "must name at least one state");
        }
        return new UniqueOptions(argsFields, key, period, new java.util.HashSet<>(java.util.Arrays.asList(states)));
    }
}
