package dev.riffle.engine.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;
import reactor.core.scheduler.Schedulers;

/**
 * Proves {@link SchedulerErrorGuard} fails a test during which a task threw on a Reactor scheduler: without it, such an
 * exception is only logged and the test passes.
 */
class SchedulerErrorGuardTest {

    private static final String VICTIM = "riffle.test.schedulerGuardVictim";

    @Test
    void aTestDuringWhichATaskThrowsOnASchedulerFails() {
        TestExecutionSummary summary = run(Victim.class);

        assertThat(summary.getTestsSucceededCount()).as("the victim's test body itself passes").isZero();
        assertThat(summary.getFailures()).singleElement().satisfies(f -> assertThat(f.getException())
                .hasMessageContaining("escaped onto a Reactor scheduler")
                .hasRootCauseMessage("thrown on a timer thread"));
    }

    @Test
    void aQuietTestPasses() {
        TestExecutionSummary summary = run(Quiet.class);

        assertThat(summary.getTestsSucceededCount()).isEqualTo(1);
        assertThat(summary.getFailures()).isEmpty();
    }

    private static TestExecutionSummary run(Class<?> testClass) {
        System.setProperty(VICTIM, "true");
        try {
            Launcher launcher = LauncherFactory.create();
            SummaryGeneratingListener listener = new SummaryGeneratingListener();
            launcher.execute(LauncherDiscoveryRequestBuilder.request().selectors(selectClass(testClass)).build(), listener);
            return listener.getSummary();
        } finally {
            System.clearProperty(VICTIM);
        }
    }

    /** Runs only inside {@link #run}: its task throws where no subscriber can see it. */
    @EnabledIfSystemProperty(named = VICTIM, matches = "true")
    @ExtendWith(SchedulerErrorGuard.class)
    static class Victim {
        @Test
        void throwsOnATimerThread() throws InterruptedException {
            CountDownLatch ran = new CountDownLatch(1);
            Schedulers.parallel().schedule(() -> {
                ran.countDown();
                throw new IllegalStateException("thrown on a timer thread");
            }, 1, TimeUnit.MILLISECONDS);
            assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
            // The hook runs on the scheduler thread right after the task threw; give it a moment to record.
            Thread.sleep(200);
        }
    }

    /** Runs only inside {@link #run}: schedules a task that does not throw. */
    @EnabledIfSystemProperty(named = VICTIM, matches = "true")
    @ExtendWith(SchedulerErrorGuard.class)
    static class Quiet {
        @Test
        void schedulesQuietly() throws InterruptedException {
            CountDownLatch ran = new CountDownLatch(1);
            Schedulers.parallel().schedule(ran::countDown, 1, TimeUnit.MILLISECONDS);
            assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
        }
    }
}
