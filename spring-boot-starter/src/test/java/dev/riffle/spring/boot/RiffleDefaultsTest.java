package dev.riffle.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.MaintenanceConfig;
import dev.riffle.engine.RiffleConfig;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code riffle.*} defaults are the engine's, and the metadata file for IDE completion is generated. */
class RiffleDefaultsTest {

    @Test
    void propertyDefaultsAreTheEnginesDefaults() {
        RiffleProperties p = new RiffleProperties();
        assertThat(p.isEnabled()).isTrue();
        assertThat(p.getSchema()).isEqualTo(RiffleConfig.DEFAULT_SCHEMA);
        assertThat(p.getUrl()).isNull();
        assertThat(p.getMigrate()).isNull();
        assertThat(p.getPoolSize()).isEqualTo(RiffleConfig.DEFAULT_POOL_SIZE);
        assertThat(p.getMaxClaimBatch()).isEqualTo(RiffleConfig.DEFAULT_MAX_CLAIM_BATCH);
        assertThat(p.getCompletionBatchSize()).isEqualTo(RiffleConfig.DEFAULT_COMPLETION_BATCH_SIZE);
        assertThat(p.getCompletionWindow()).isEqualTo(RiffleConfig.DEFAULT_COMPLETION_WINDOW);
        assertThat(p.getPollInterval()).isEqualTo(RiffleConfig.DEFAULT_POLL_INTERVAL);
        assertThat(p.getSafetyPollInterval()).isEqualTo(RiffleConfig.DEFAULT_SAFETY_POLL_INTERVAL);
        assertThat(p.getMeterRefreshInterval()).isEqualTo(RiffleConfig.DEFAULT_METER_REFRESH_INTERVAL);
        assertThat(p.getMaxArgsBytes()).isEqualTo(RiffleConfig.DEFAULT_MAX_ARGS_BYTES);
        assertThat(p.getCopyEnqueueThreshold()).isEqualTo(RiffleConfig.DEFAULT_COPY_ENQUEUE_THRESHOLD);
        assertThat(p.getClaimConcurrency()).isEqualTo(RiffleConfig.DEFAULT_CLAIM_CONCURRENCY);
        RiffleConfig engineDefaults = RiffleConfig.builder().url("postgresql://localhost/x").build();
        assertThat(p.getApplicationName()).isEqualTo(engineDefaults.applicationName());
        assertThat(p.isWorkPrefetch()).isEqualTo(engineDefaults.workPrefetch());
        assertThat(p.isDlqByDefault()).isEqualTo(engineDefaults.dlqByDefault());
        MaintenanceConfig m = MaintenanceConfig.defaults();
        assertThat(p.getMaintenance().isEnabled()).isEqualTo(m.enabled());
        assertThat(p.getMaintenance().getHistoryRetention()).isEqualTo(m.historyRetention());
        assertThat(p.getMaintenance().getStaleAfter()).isEqualTo(m.staleAfter());
        assertThat(p.getMaintenance().getHeartbeatInterval()).isEqualTo(m.heartbeatInterval());
        assertThat(p.getMaintenance().getDlqRetention()).isEqualTo(m.dlqRetention());
        assertThat(p.getWorker().getQueues()).containsExactly("default");
        assertThat(p.getQueues()).isEmpty();
    }

    @Test
    void metadataForIdeCompletionIsGenerated() throws Exception {
        String json;
        try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("META-INF/spring-configuration-metadata.json").isNotNull();
            json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        for (String name : List.of("riffle.enabled", "riffle.schema", "riffle.url", "riffle.migrate",
                "riffle.migration.url", "riffle.pool-size", "riffle.worker.concurrency", "riffle.worker.queues",
                "riffle.shutdown.grace-period", "riffle.maintenance.enabled", "riffle.queues")) {
            assertThat(json).contains("\"name\": \"" + name + "\"");
        }
        // descriptions come from the field Javadoc; defaults from the initializers
        assertThat(json).contains("Storage schema of Riffle's tables and functions.");
        assertThat(json).contains("\"defaultValue\": \"20s\"");
    }
}
