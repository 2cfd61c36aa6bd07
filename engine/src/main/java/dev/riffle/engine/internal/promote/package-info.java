/**
 * Promotion of due deferred jobs into the ready ring ({@code R__25_promote.sql}, {@code Promoter}).
 */
@NullMarked
package dev.riffle.engine.internal.promote;

import org.jspecify.annotations.NullMarked;
