/**
 * Wake-ups over LISTEN/NOTIFY: one dedicated connection per engine that hears enqueue and cancel notifications,
 * reconnects with backoff after an outage, and tells claim loops when to look again.
 */
@NullMarked
package dev.riffle.engine.internal.notify;

import org.jspecify.annotations.NullMarked;
