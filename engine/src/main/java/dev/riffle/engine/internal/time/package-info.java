/**
 * Local time for the machinery: the one injectable clock ({@code EngineClock}) behind every elapsed-time check.
 * Database state is always judged by the database clock; this package only measures what this process waits for.
 */
@NullMarked
package dev.riffle.engine.internal.time;

import org.jspecify.annotations.NullMarked;
