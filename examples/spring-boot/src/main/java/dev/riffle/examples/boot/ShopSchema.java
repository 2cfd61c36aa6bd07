package dev.riffle.examples.boot;

import java.time.Duration;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Component;

/**
 * Creates the app's own table at start, on the thread that starts the application (a real app would have its
 * migrations do it). Riffle's schema is the starter's business.
 */
@Component
public class ShopSchema implements InitializingBean {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private final DatabaseClient db;
    private final ShopProperties shop;

    /** Creates the table with {@code db} in {@code shop.schema}. */
    public ShopSchema(DatabaseClient db, ShopProperties shop) {
        this.db = db;
        this.shop = shop;
    }

    @Override
    public void afterPropertiesSet() {
        db.sql("CREATE SCHEMA IF NOT EXISTS \"" + shop.schema() + "\"").then()
                .then(db.sql("CREATE TABLE IF NOT EXISTS " + shop.ordersTable() + " ("
                        + "id bigserial PRIMARY KEY, item text NOT NULL, quantity int NOT NULL, "
                        + "created_at timestamptz NOT NULL DEFAULT now(), confirmed_at timestamptz, "
                        + "confirmed_by_job bigint)").then())
                .block(WAIT);
    }
}
