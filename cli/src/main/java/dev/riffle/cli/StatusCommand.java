package dev.riffle.cli;

import dev.riffle.admin.AdminJson;
import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.QueueCounts;
import dev.riffle.engine.api.RingStatus;
import java.util.List;
import picocli.CommandLine.Command;

/** {@code riffle status}: every queue with its counts, the rings' cursors, whether a leader runs maintenance. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Queues with their counts (an admin read that scans the backlog), the rings' cursors, and "
                + "whether a maintenance leader is present.")
final class StatusCommand extends Base {

    @Override
    int run(Riffle riffle) {
        List<QueueCounts> queues = riffle.admin().queues().concatMap(riffle::counts, 1).collectList()
                .block(RiffleCli.TIMEOUT);
        List<RingStatus> rings = riffle.maintenance().status().collectList().block(RiffleCli.TIMEOUT);
        boolean leader = Boolean.TRUE.equals(riffle.maintenance().leaderPresent().block(RiffleCli.TIMEOUT));
        String schema = root().schemaName();
        if (json()) {
            printJson(g -> {
                g.writeStartObject();
                g.writeStringProperty("schema", schema);
                g.writeBooleanProperty("leader", leader);
                g.writeArrayPropertyStart("queues");
                for (QueueCounts q : queues) {
                    AdminJson.startQueueCounts(g, q);
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.writeArrayPropertyStart("rings");
                for (RingStatus r : rings) {
                    AdminJson.ring(g, r);
                }
                g.writeEndArray();
                g.writeEndObject();
            });
            return RiffleCli.OK;
        }
        out().printf("schema %s, maintenance leader %s%n%n", schema, leader ? "present" : "ABSENT");
        if (queues.isEmpty()) {
            out().println("no queues");
        } else {
            out().printf("%-24s %10s %10s %10s %12s  %s%n", "QUEUE", "AVAILABLE", "IN_FLIGHT", "SCHEDULED",
                    "COMPLETED", "STATE");
            for (QueueCounts q : queues) {
                out().printf("%-24s %10d %10d %10d %12d  %s%n", q.queue(), q.available(), q.inFlight(), q.scheduled(),
                        q.completed(), q.paused() ? "paused" : "running");
            }
        }
        out().println();
        out().printf("%-6s %5s %11s %6s  %s%n", "RING", "SLOT", "GENERATION", "SLOTS", "SEALED (oldest first)");
        for (RingStatus r : rings) {
            out().printf("%-6s %5d %11d %6d  %s%n", r.ring().sqlName(), r.currentSlot(), r.generation(),
                    r.slotCount(), r.sealedSlots());
        }
        return RiffleCli.OK;
    }
}
