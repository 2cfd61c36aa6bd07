package dev.riffle.spring.boot;

import dev.riffle.engine.test.TestDatabase;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A context runner the way an application would have it: Boot's R2DBC on the test database, then the starter. */
final class TestApps {

    private TestApps() {}

    /** spring.r2dbc.* for {@code db}, and riffle.schema = the test class's schema. */
    static String[] databaseProperties(TestDatabase db) {
        List<String> p = new ArrayList<>();
        p.add("spring.r2dbc.url=r2dbc:postgresql://" + db.url().host() + ":" + db.url().port() + "/" + db.url().database());
        p.add("spring.r2dbc.username=" + db.url().user());
        if (db.url().password() != null) {
            p.add("spring.r2dbc.password=" + db.url().password());
        }
        p.add("riffle.schema=" + db.schema());
        // quick leadership, so the health tests need not wait the default 5 s retry
        return p.toArray(String[]::new);
    }

    static ApplicationContextRunner runner(TestDatabase db) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(R2dbcAutoConfiguration.class, RiffleAutoConfiguration.class,
                        RiffleHealthAutoConfiguration.class))
                .withPropertyValues(databaseProperties(db));
    }
}
