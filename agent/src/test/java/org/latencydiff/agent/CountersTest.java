package org.latencydiff.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.lang.reflect.Proxy;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

class CountersTest {

    /** A ThreadMXBean whose allocation total returns the given readings in turn, the last one forever. */
    private static LongSupplier readings(List<Long> values, int[] calls) {
        Deque<Long> left = new ArrayDeque<>(values);
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) Proxy.newProxyInstance(
                CountersTest.class.getClassLoader(), new Class<?>[] {com.sun.management.ThreadMXBean.class},
                (proxy, method, args) -> {
                    if (!method.getName().equals("getTotalThreadAllocatedBytes")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    calls[0]++;
                    return left.size() > 1 ? left.poll() : left.peek();
                });
        LongSupplier total = Counters.totalAllocatedBytes(bean);
        assertNotNull(total, "the JDK that runs the tests (21+) has getTotalThreadAllocatedBytes");
        return total;
    }

    @Test
    void aTotalThatStillMovesIsReadAgainUntilItStands() {
        // 100 misses an exiting thread's bytes; 4,100 has them; 4,100 again: settled.
        int[] calls = {0};
        assertEquals(4_100, Counters.settledAllocatedBytes(readings(List.of(100L, 4_100L, 4_100L), calls)));
        assertEquals(3, calls[0]);
    }

    @Test
    void aStandingTotalCostsTwoReadings() {
        int[] calls = {0};
        assertEquals(500, Counters.settledAllocatedBytes(readings(List.of(500L), calls)));
        assertEquals(2, calls[0]);
    }

    @Test
    void aTotalThatNeverStandsGivesTheLastOfAtMostTenReadings() {
        int[] calls = {0};
        List<Long> rising = List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L, 12L);
        assertEquals(10, Counters.settledAllocatedBytes(readings(rising, calls)));
        assertEquals(Counters.SETTLE_READINGS, calls[0]);
    }
}
