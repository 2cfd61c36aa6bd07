package dev.riffle.engine.internal.notify;

/**
 * The NOTIFY channel names of one schema, defined once on the Java side (the SQL side is {@code R__01_channels.sql};
 * NotifyChannelsIT holds the two together).
 *
 * @param ready wakes claim loops; the payload is a queue name
 * @param cancel an attempt was taken away; the payload is {@code job_id:run_lease}
 * @param callback an external callback was resolved; the payload is the callback id
 */
public record NotifyChannels(String ready, String cancel, String callback) {

    /** The channels of {@code schema} (an already validated schema name). */
    public static NotifyChannels of(String schema) {
        return new NotifyChannels(schema + ".ready", schema + ".cancel", schema + ".callback");
    }
}
