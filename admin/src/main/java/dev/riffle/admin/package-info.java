/**
 * Riffle's admin HTTP API and dashboard (docs/dashboard.md): JSON endpoints over the engine's public admin API —
 * queues with counts and rates, job lookup and search, the DLQ, cancel, pause and resume, ring status, the leader,
 * the proof doctor — and a static page over them, served by Reactor Netty. {@link dev.riffle.admin.RiffleAdminHttp}
 * mounts the routes on an application's server or starts a server of its own; {@link dev.riffle.admin.AdminHttpOptions}
 * sets the prefix, read-only mode and the {@link dev.riffle.admin.AdminAuthorizer authorization hook}.
 */
@NullMarked
package dev.riffle.admin;

import org.jspecify.annotations.NullMarked;
