/**
 * Who runs maintenance, and when: leadership by session advisory lock ({@code Leadership}) and the scheduled loop
 * that runs one maintenance step on its cadence while this process leads, logging an outage once when it starts
 * and once when it ends ({@code MaintenanceLoop}). The steps themselves live with their mechanisms: {@code promote},
 * {@code ring}, {@code rescue}, {@code admin}.
 */
@NullMarked
package dev.riffle.engine.internal.leader;

import org.jspecify.annotations.NullMarked;
