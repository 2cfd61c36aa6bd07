package dev.riffle.engine.test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import reactor.core.scheduler.Schedulers;

/**
 * Fails a test when an exception escaped onto a Reactor scheduler while it ran ({@link Schedulers#onHandleError}).
 * Such an exception never reaches any subscriber: Reactor only logs it, so without this guard a timer task or a
 * {@code doFinally} that throws (and, say, leaks a flush slot) would pass every test that does not happen to wait
 * on the stalled work.
 *
 * <p>Applied by {@link RiffleTest}; a test JVM can also apply it to every class through JUnit's extension
 * auto-detection. The hook is JVM-wide, so an error is charged to the test that was running when it fired, or, when
 * it fired between tests, to the class that ends next; the failure message carries the thread and stack trace.
 */
public final class SchedulerErrorGuard implements BeforeAllCallback, BeforeEachCallback, AfterEachCallback,
        AfterAllCallback {

    private static final String HOOK_KEY = SchedulerErrorGuard.class.getName();
    private static final AtomicBoolean INSTALLED = new AtomicBoolean();
    private static final ConcurrentLinkedQueue<Escaped> ESCAPED = new ConcurrentLinkedQueue<>();

    private record Escaped(String thread, Throwable error) {}

    /** Created by JUnit. */
    public SchedulerErrorGuard() {}

    /** Installs the JVM-wide hook once; later calls do nothing. */
    public static void install() {
        if (INSTALLED.compareAndSet(false, true)) {
            Schedulers.onHandleError(HOOK_KEY, (thread, error) -> ESCAPED.add(new Escaped(thread.getName(), error)));
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        install();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        install();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        check(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        check(context);
    }

    private static void check(ExtensionContext context) {
        List<Escaped> seen = new ArrayList<>();
        for (Escaped e; (e = ESCAPED.poll()) != null; ) {
            seen.add(e);
        }
        if (seen.isEmpty()) {
            return;
        }
        AssertionError failure = new AssertionError(seen.size() + " exception(s) escaped onto a Reactor scheduler during "
                + context.getDisplayName() + "; first on thread " + seen.get(0).thread() + ": " + seen.get(0).error(),
                seen.get(0).error());
        for (int i = 1; i < seen.size(); i++) {
            failure.addSuppressed(seen.get(i).error());
        }
        throw failure;
    }
}
