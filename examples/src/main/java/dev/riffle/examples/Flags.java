package dev.riffle.examples;

import java.util.ArrayList;
import java.util.List;

/** Command-line flags of the examples: {@code --name value} or {@code --name=value}, in the order given. */
public final class Flags {

    /** One flag and its value. */
    public record Flag(String name, String value) {}

    private Flags() {}

    /**
     * Splits the arguments into flags.
     *
     * @throws IllegalArgumentException when a flag has no value
     */
    public static List<Flag> parse(String... args) {
        List<Flag> out = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            int eq = flag.indexOf('=');
            if (eq > 0) {
                out.add(new Flag(flag.substring(0, eq), flag.substring(eq + 1)));
            } else if (i + 1 < args.length) {
                out.add(new Flag(flag, args[++i]));
            } else {
                throw new IllegalArgumentException(flag + " needs a value");
            }
        }
        return out;
    }
}
