/**
 * Operator-side upkeep of the dead-letter queue ({@code R__80_admin.sql} holds the operator functions): the
 * retention pass that deletes DLQ entries past their retention, bounded per run ({@code DlqRetention}).
 */
@NullMarked
package dev.riffle.engine.internal.admin;

import org.jspecify.annotations.NullMarked;
