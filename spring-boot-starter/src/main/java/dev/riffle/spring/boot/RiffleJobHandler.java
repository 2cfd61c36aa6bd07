package dev.riffle.spring.boot;

import dev.riffle.engine.api.JobHandler;

/**
 * A {@link JobHandler} bean that names its own kind; the alternative to {@link RiffleHandler} when the kind is
 * computed (from configuration, say). The starter registers every such bean under {@link #kind()}.
 */
public interface RiffleJobHandler extends JobHandler {

    /** The job kind this handler runs; the engine's name rule applies. */
    String kind();
}
