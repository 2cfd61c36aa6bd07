/**
 * Fault-injection tooling for Riffle's reliability tests (RELIABILITY.md §3): a PostgreSQL cluster a test owns and
 * may restart or crash ({@link dev.riffle.engine.test.fault.PgCluster}), server-side faults that also work on a
 * shared server ({@link dev.riffle.engine.test.fault.PgFaults}), worker processes that can be SIGKILLed
 * ({@link dev.riffle.engine.test.fault.ChildJvm}, {@link dev.riffle.engine.test.fault.ChaosWorkerMain}), and the
 * database-side exactly-once oracle ({@link dev.riffle.engine.test.fault.CompletionOracle}).
 *
 * <p>Everything here blocks and belongs on test threads, except {@link dev.riffle.engine.test.fault.Completions},
 * which is reactive and safe inside job handlers.
 */
@NullMarked
package dev.riffle.engine.test.fault;

import org.jspecify.annotations.NullMarked;
