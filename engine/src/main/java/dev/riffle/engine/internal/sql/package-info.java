/**
 * The thin database layer: a catalog of named static statements ({@code SqlCatalog}, schema placeholder
 * resolved once from a validated, quoted name) and a runner over the R2DBC pool with one classification of
 * transient errors ({@code Db}).
 */
@NullMarked
package dev.riffle.engine.internal.sql;

import org.jspecify.annotations.NullMarked;
