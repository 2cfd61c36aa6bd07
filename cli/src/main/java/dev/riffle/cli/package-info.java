/**
 * The {@code riffle} command line (docs/cli.md): {@link dev.riffle.cli.RiffleCli} and its commands, over the engine's
 * public API. Blocking by design: a command line waits for each answer.
 */
@NullMarked
package dev.riffle.cli;

import org.jspecify.annotations.NullMarked;
