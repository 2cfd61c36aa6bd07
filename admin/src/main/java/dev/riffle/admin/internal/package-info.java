/**
 * The admin HTTP module's machinery: request routing and validation, JSON writing, the queue sampler behind the
 * rates and the chart, the classpath page. Public for the module's own wiring only; not an API.
 */
@NullMarked
package dev.riffle.admin.internal;

import org.jspecify.annotations.NullMarked;
