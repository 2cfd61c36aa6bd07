package dev.riffle.spring.boot;

import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.NewJob;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * The application's handler beans by job kind: every {@link JobHandler} bean, under the kind its
 * {@link RiffleHandler} annotation (on the class or the {@code @Bean} method) or its {@link RiffleJobHandler#kind()}
 * names. {@link RiffleLifecycle} runs them. Immutable.
 */
public final class RiffleHandlers {

    private final Map<String, JobHandler> byKind;

    /** Handlers by kind, as given (copied). */
    public RiffleHandlers(Map<String, JobHandler> byKind) {
        byKind.keySet().forEach(kind -> NewJob.checkName("kind", kind));
        this.byKind = Map.copyOf(byKind);
    }

    /**
     * Collects every {@link JobHandler} bean of {@code beans}.
     *
     * @throws IllegalStateException naming the bean(s) when a handler has no kind, an invalid one, two different
     *     kinds (annotation and {@code kind()}), or shares its kind with another handler bean
     */
    public static RiffleHandlers fromBeans(ListableBeanFactory beans) {
        Map<String, JobHandler> byKind = new TreeMap<>();
        Map<String, String> beanOfKind = new LinkedHashMap<>();
        for (String name : beans.getBeanNamesForType(JobHandler.class)) {
            JobHandler handler = beans.getBean(name, JobHandler.class);
            RiffleHandler annotation = beans.findAnnotationOnBean(name, RiffleHandler.class);
            String fromAnnotation = annotation == null ? null : annotation.value();
            String fromInterface = handler instanceof RiffleJobHandler k ? k.kind() : null;
            if (fromAnnotation != null && fromInterface != null && !fromAnnotation.equals(fromInterface)) {
                throw new IllegalStateException("JobHandler bean '" + name + "' names two kinds: @RiffleHandler(\""
                        + fromAnnotation + "\") and kind() \"" + fromInterface + "\"");
            }
            String kind = fromAnnotation != null ? fromAnnotation : fromInterface;
            if (kind == null) {
                throw new IllegalStateException("JobHandler bean '" + name + "' has no kind: annotate its class or "
                        + "@Bean method with @RiffleHandler(\"kind\"), or implement RiffleJobHandler");
            }
            try {
                NewJob.checkName("kind", kind);
            } catch (InvalidJobException e) {
                throw new IllegalStateException("JobHandler bean '" + name + "': " + e.getMessage(), e);
            }
            String other = beanOfKind.putIfAbsent(kind, name);
            if (other != null) {
                throw new IllegalStateException("JobHandler beans '" + other + "' and '" + name + "' both handle kind '"
                        + kind + "': one handler per kind");
            }
            byKind.put(kind, handler);
        }
        return new RiffleHandlers(byKind);
    }

    /** Handlers by kind (unmodifiable). */
    public Map<String, JobHandler> byKind() {
        return byKind;
    }

    /** Whether there is no handler. */
    public boolean isEmpty() {
        return byKind.isEmpty();
    }

    @Override
    public String toString() {
        return "RiffleHandlers" + new TreeMap<>(byKind).keySet();
    }
}
