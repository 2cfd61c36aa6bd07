package dev.riffle.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A named benchmark shape, run for both systems in addition to the {@code --scenarios} (flag {@code --profiles}).
 *
 * <ul>
 *   <li>{@code <N>x<W>} (e.g. {@code 1x32}, {@code 4x8}): drain one queue with N engine instances of W handlers
 *       each. With {@code --fleet process} (the default) every instance is its own JVM ({@link WorkerMain}, started
 *       by {@link ProcessFleet}); with {@code --fleet jvm} the N instances, each with its own connections, share the
 *       harness JVM. The baseline gets the same shape: N instances of W workers.</li>
 *   <li>{@code <N>x<W>-jvm} (e.g. {@code 4x8-jvm}): the same shape with the N instances in the harness JVM whatever
 *       {@code --fleet} says. Beside {@code <N>x<W>} it tells what one queue shared by N engines costs in the
 *       database from what N JVMs cost on the machine: on two cores, four JVMs of either system halve the drain
 *       (docs/benchmarks.md, session 14).</li>
 *   <li>{@code w<W>} (e.g. {@code w256}): drain with W handlers on one instance in the harness JVM, like the drain
 *       scenario with {@code --workers W}.</li>
 *   <li>{@code steady-r<R>-w<W>} (e.g. {@code steady-r500-w16}, issue #12's steady case): the steady scenario with
 *       the producer of both systems at a fixed R jobs/s and W handlers ({@code -w<W>} optional: the steady
 *       scenario's {@code --steady-workers} without it), the steady run's handler delay.</li>
 *   <li>{@code steady-b<P>} (e.g. {@code steady-b50}): the steady scenario with the producer of BOTH systems at P % of
 *       the baseline's drain peak at the steady shape from the same round: the baseline's completed jobs/s in the
 *       drain run with the steady run's handlers and handler delay ({@code --steady-workers},
 *       {@code --steady-delay-ms}); without such a run, its highest completed jobs/s of any drain run.</li>
 * </ul>
 *
 * {@code all} stands for {@code 1x32,4x8,1x32-jvm,4x8-jvm,w256,steady-r500-w16,steady-b50}.
 *
 * @param name            as given on the command line (normalised to lower case)
 * @param steady          true for {@code steady-b<P>} and {@code steady-r<R>}, false for the drain shapes
 * @param instances       engine instances (drain shapes)
 * @param workers         handlers per instance (drain shapes; {@code steady-r<R>-w<W>}: W, else 0 for the
 *                        steady scenario's own)
 * @param separateProcess whether each instance is its own JVM
 * @param baselineLoad    fraction of the baseline's drain peak ({@code steady-b<P>})
 * @param fixedRate       jobs/s for both systems ({@code steady-r<R>}), else 0
 */
record Profile(String name, boolean steady, int instances, int workers, boolean separateProcess, double baselineLoad,
               double fixedRate) {

    static final List<String> ALL = List.of("1x32", "4x8", "1x32-jvm", "4x8-jvm", "w256", "steady-r500-w16",
            "steady-b50");

    /** A profile without a fixed rate. */
    Profile(String name, boolean steady, int instances, int workers, boolean separateProcess, double baselineLoad) {
        this(name, steady, instances, workers, separateProcess, baselineLoad, 0);
    }

    private static final Pattern FLEET = Pattern.compile("(\\d{1,3})x(\\d{1,5})(-jvm)?");
    private static final Pattern WIDE = Pattern.compile("(?:w|w=)(\\d{1,5})");
    private static final Pattern STEADY = Pattern.compile("steady-b(\\d{1,3})");
    private static final Pattern FIXED = Pattern.compile("steady-r(\\d{1,6})(?:-w(\\d{1,5}))?");

    /** Parses a comma-separated list; {@code fleet} is {@code process} or {@code jvm} for the NxW shapes. */
    static List<Profile> parseList(String text, String fleet) {
        List<Profile> out = new ArrayList<>();
        for (String w : text.split(",")) {
            String t = w.trim().toLowerCase(Locale.ROOT);
            if (t.isEmpty() || t.equals("none")) {
                continue;
            }
            if (t.equals("all")) {
                for (String a : ALL) {
                    out.add(parse(a, fleet));
                }
            } else {
                out.add(parse(t, fleet));
            }
        }
        return List.copyOf(out);
    }

    static Profile parse(String text, String fleet) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        Matcher m = FLEET.matcher(t);
        if (m.matches()) {
            int n = Integer.parseInt(m.group(1));
            int w = Integer.parseInt(m.group(2));
            if (n < 1 || n > 16 || w < 1) {
                throw new BenchConfig.UsageException("profile " + t + ": 1..16 instances of at least 1 handler");
            }
            return new Profile(t, false, n, w, m.group(3) == null && fleet.equals("process"), 0);
        }
        m = WIDE.matcher(t);
        if (m.matches()) {
            int w = Integer.parseInt(m.group(1));
            if (w < 1) {
                throw new BenchConfig.UsageException("profile " + t + ": at least 1 handler");
            }
            return new Profile("w" + w, false, 1, w, false, 0);
        }
        m = STEADY.matcher(t);
        if (m.matches()) {
            int p = Integer.parseInt(m.group(1));
            if (p < 1 || p > 200) {
                throw new BenchConfig.UsageException("profile " + t + ": 1..200 % of the baseline's drain peak");
            }
            return new Profile(t, true, 1, 0, false, p / 100.0);
        }
        m = FIXED.matcher(t);
        if (m.matches()) {
            int r = Integer.parseInt(m.group(1));
            int w = m.group(2) == null ? 0 : Integer.parseInt(m.group(2));
            if (r < 1 || (m.group(2) != null && w < 1)) {
                throw new BenchConfig.UsageException("profile " + t + ": at least 1 job/s and 1 handler");
            }
            return new Profile(t, true, 1, w, false, 0, r);
        }
        throw new BenchConfig.UsageException("unknown profile " + t + " (allowed: <N>x<W> such as 4x8, <N>x<W>-jvm"
                + " such as 4x8-jvm, w<W> such as"
                + " w256, steady-r<R>[-w<W>] such as steady-r500-w16, steady-b<P> such as steady-b50, all)");
    }

    /** The summary key of this profile's runs at handler delay {@code delayMillis} (drain shapes). */
    String key(int delayMillis) {
        if (steady) {
            return "profile " + name;
        }
        String shape = name.startsWith("w") ? "W=" + workers : name;
        return "profile " + shape + " delay=" + delayMillis + "ms";
    }

    /** One line for the report's configuration section. */
    String describe(int steadyWorkers, int steadyDelayMillis) {
        if (steady && fixedRate > 0) {
            return "`" + name + "`: steady, both systems' producers at a fixed " + Math.round(fixedRate)
                    + " jobs/s, W=" + (workers > 0 ? workers : steadyWorkers) + ", " + steadyDelayMillis
                    + " ms handler";
        }
        if (steady) {
            return "`" + name + "`: steady, both systems' producers at " + Math.round(baselineLoad * 100)
                    + " % of the baseline's drain peak at the same W and handler delay in the same round, W=" + steadyWorkers + ", "
                    + steadyDelayMillis + " ms handler";
        }
        if (name.startsWith("w")) {
            return "`" + name + "`: drain with " + workers + " handlers, one instance in the harness JVM";
        }
        return "`" + name + "`: drain one queue with " + instances + (instances == 1 ? " instance" : " instances")
                + " of " + workers + " handlers, " + (separateProcess
                ? (instances == 1 ? "in its own JVM process" : "each in its own JVM process")
                : (instances == 1 ? "in the harness JVM" : "all in the harness JVM, each with its own connections"));
    }
}
