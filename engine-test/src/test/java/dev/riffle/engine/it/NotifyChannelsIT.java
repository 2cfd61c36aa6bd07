package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.internal.notify.NotifyChannels;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import org.junit.jupiter.api.Test;

/** The channel names are defined once per side; this holds the SQL side and the Java side together. */
@RiffleTest
class NotifyChannelsIT {

    @Test
    void sqlAndJavaNameTheSameChannels(TestDatabase db) {
        NotifyChannels java = NotifyChannels.of(db.schema());
        assertThat(db.queryRows("SELECT ready_channel() AS ready, cancel_channel() AS cancel, callback_channel() AS callback"))
                .singleElement().satisfies(r -> {
                    assertThat(r.get("ready")).isEqualTo(java.ready());
                    assertThat(r.get("cancel")).isEqualTo(java.cancel());
                    assertThat(r.get("callback")).isEqualTo(java.callback());
                });
    }
}
