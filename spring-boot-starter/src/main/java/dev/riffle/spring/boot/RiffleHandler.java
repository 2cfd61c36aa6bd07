package dev.riffle.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names the job kind a {@link dev.riffle.engine.api.JobHandler} bean handles. Put it on the handler's class (a
 * {@code @Component}) or on the {@code @Bean} method that returns the handler:
 *
 * <pre>{@code
 * @Component
 * @RiffleHandler("email.send")
 * class SendEmail implements JobHandler {
 *     public Mono<JobOutcome> handle(Job job) { ... }
 * }
 * }</pre>
 *
 * <p>The kind follows the engine's name rule ({@link dev.riffle.engine.api.NewJob#checkName(String, String)}); two
 * handler beans for one kind, or a {@code JobHandler} bean with no kind, stop the application at start with a
 * message naming the beans. A handler may instead implement {@link RiffleJobHandler}.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface RiffleHandler {

    /** The job kind this handler runs. */
    String value();
}
