package dev.riffle.engine.outcomes;

import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The common frame of the outcome tests: the class's own schema ({@link RiffleTest}) and, per test, one open
 * {@link Probe} connection for assertions, closed after the test.
 */
@RiffleTest
abstract class ProbeIT {
    /** Per-test probe connection on the class's schema. */
    Probe db;
    /** The class's schema, for connections of a test's own. */
    TestDatabase database;

    @BeforeEach
    void openProbe(TestDatabase database) {
        this.database = database;
        db = Probe.open(database);
    }

    @AfterEach
    void closeProbe() {
        db.close();
    }
}
