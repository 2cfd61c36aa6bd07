package dev.riffle.engine.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.test.RiffleTest;
import dev.riffle.engine.test.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;

/** Demand decides claim size: never more claimed than requested, nothing claimed without demand. */
@RiffleTest
class BackpressureIT {

    /** Holds what it receives and requests only when told to. */
    static final class ManualSubscriber extends BaseSubscriber<Job> {
        final List<Job> received = new CopyOnWriteArrayList<>();

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            // no initial request
        }

        @Override
        protected void hookOnNext(Job value) {
            received.add(value);
        }
    }

    private static long claimedItems(TestDatabase db, String queue) {
        return db.queryLong("SELECT coalesce(sum(claimed_count), 0) FROM lease_claim_batches WHERE queue = ?", queue);
    }

    private static void pause(Duration d) {
        Mono.delay(d).block();
    }

    @Test
    void aSubscriberRequestingFiveAtATimeNeverHasMoreThanFiveClaimed(TestDatabase db) {
        // Short poll intervals: the loop gets every chance to over-claim if demand did not bound it.
        Riffle riffle = Engines.start(db, b -> b.pollInterval(Duration.ofMillis(20)).safetyPollInterval(Duration.ofMillis(50)));
        ManualSubscriber sub = new ManualSubscriber();
        try {
            Engines.enqueue(riffle, "bp", 60);
            riffle.subscribe("bp").subscribe(sub);
            for (int round = 1; round <= 6; round++) {
                sub.request(5);
                int expected = round * 5;
                long deadline = System.nanoTime() + Engines.TIMEOUT.toNanos();
                while (sub.received.size() < expected && System.nanoTime() < deadline) {
                    pause(Duration.ofMillis(20));
                }
                assertThat(sub.received).hasSize(expected);
                pause(Duration.ofMillis(300));
                // Claimed in the database == delivered: nothing claimed ahead of demand.
                assertThat(claimedItems(db, "bp")).isEqualTo(expected);
                assertThat(sub.received).hasSize(expected);
                var counts = riffle.counts("bp").block(Engines.TIMEOUT);
                assertThat(counts.inFlight()).isEqualTo(expected);
                assertThat(counts.available()).isEqualTo(60 - expected);
            }
        } finally {
            sub.dispose();
            Engines.close(riffle);
        }
    }

    @Test
    void aSubscriberThatRequestsNothingCausesNoClaim(TestDatabase db) {
        Riffle riffle = Engines.start(db, b -> b.pollInterval(Duration.ofMillis(20)).safetyPollInterval(Duration.ofMillis(50)));
        ManualSubscriber sub = new ManualSubscriber();
        try {
            Engines.enqueue(riffle, "idle", 10);
            riffle.subscribe("idle").subscribe(sub);
            pause(Duration.ofSeconds(1));
            assertThat(sub.received).isEmpty();
            assertThat(claimedItems(db, "idle")).isZero();
            assertThat(db.queryLong("SELECT count(*) FROM ready_claim_attempt_batches WHERE queue = 'idle'")).isZero();
            assertThat(riffle.stats().claimBatches()).isZero();
            // The same subscription claims as soon as it asks: the loop was alive, only demand was missing.
            sub.request(3);
            long deadline = System.nanoTime() + Engines.TIMEOUT.toNanos();
            while (sub.received.size() < 3 && System.nanoTime() < deadline) {
                pause(Duration.ofMillis(20));
            }
            assertThat(sub.received).hasSize(3);
            assertThat(claimedItems(db, "idle")).isEqualTo(3);
        } finally {
            sub.dispose();
            Engines.close(riffle);
        }
    }
}
