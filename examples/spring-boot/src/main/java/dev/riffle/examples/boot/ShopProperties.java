package dev.riffle.examples.boot;

import java.util.regex.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code shop.*}: where the app keeps its own table.
 *
 * @param schema the schema of the {@code orders} table, created at start if missing; {@code [a-z_][a-z0-9_]{0,62}},
 *               used only quoted
 */
@ConfigurationProperties("shop")
public record ShopProperties(String schema) {

    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    /** Validates the schema name. */
    public ShopProperties {
        if (schema == null || !NAME.matcher(schema).matches()) {
            throw new IllegalArgumentException("shop.schema must match [a-z_][a-z0-9_]{0,62}, got " + schema);
        }
    }

    /** The orders table, schema-qualified and quoted. */
    public String ordersTable() {
        return "\"" + schema + "\".orders";
    }
}
