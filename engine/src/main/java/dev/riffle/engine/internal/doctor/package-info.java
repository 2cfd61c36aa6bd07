/**
 * The proof doctor ({@code R__86_doctor.sql} holds the checks): runs them in one read-only statement and shapes
 * the answer into a {@link dev.riffle.engine.api.DoctorReport}.
 */
@NullMarked
package dev.riffle.engine.internal.doctor;

import org.jspecify.annotations.NullMarked;
