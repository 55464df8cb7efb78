package org.latencydiff.agent;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;
import java.lang.management.ThreadMXBean;
import java.util.function.LongSupplier;

/**
 * The JVM-wide counters the agent reports, read from the platform MXBeans. The driver takes them just
 * before and just after the measured phase; the difference divided by the requests is per request.
 *
 * <p>Allocation is {@code com.sun.management.ThreadMXBean.getTotalThreadAllocatedBytes()},
 * not a sum of {@code getThreadAllocatedBytes(id)} over live threads, because only the total sees
 * everything a server allocates (checked by the agent's tests on every build):
 * <ul>
 *   <li>threads that have terminated: HotSpot adds a thread's count to a JVM-wide total when it exits,
 *       so a thread-per-connection server's allocations stay counted after the connection closes;
 *       a sum over live threads loses them (it went back by 64 MB in our probe on JDK 25);</li>
 *   <li>virtual threads: their allocations are counted on the carrier (platform) thread they are
 *       mounted on, so the total includes them, while the per-thread value of a virtual thread is -1.</li>
 * </ul>
 * {@code threads} is the live platform thread count (virtual threads are not counted; their carriers are).
 *
 * <p>The agent is built for release 17, so that the JDK matrix runs servers on JDK 17 with it. The total is looked
 * up when the agent starts (JDK 17 and later have it); on a JDK without it allocated_bytes is -1 (unknown), never
 * the live-thread sum.
 */
final class Counters {

    static final String FORMAT = "latency-diff/agent/1";

    /** Readings of the allocation total, 1 ms apart, at most; see {@link #settledAllocatedBytes}. */
    static final int SETTLE_READINGS = 10;

    /** The JVM's allocation total; null where it cannot count allocated bytes: allocated_bytes is then -1. */
    private final LongSupplier allocation;
    private final ThreadMXBean threads;
    /** An array: a for-each over a List makes an Iterator per query while interpreted. */
    private final GarbageCollectorMXBean[] collectors;
    /** Null when the JVM runs without a JIT (-Xint). */
    private final CompilationMXBean compilation;
    private final RuntimeMXBean runtime;

    /** Looks the MXBeans up once, at agent start, so that a query only reads counters. */
    Counters() {
        threads = ManagementFactory.getThreadMXBean();
        com.sun.management.ThreadMXBean counting = null;
        if (threads instanceof com.sun.management.ThreadMXBean sun && sun.isThreadAllocatedMemorySupported()) {
            // On by default in HotSpot; switched on here in case a JVM flag or tool turned it off.
            if (!sun.isThreadAllocatedMemoryEnabled()) {
                sun.setThreadAllocatedMemoryEnabled(true);
            }
            counting = sun;
        }
        allocation = counting == null ? null : totalAllocatedBytes(counting);
        collectors = ManagementFactory.getGarbageCollectorMXBeans().toArray(new GarbageCollectorMXBean[0]);
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        compilation = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit : null;
        runtime = ManagementFactory.getRuntimeMXBean();
    }

    /**
     * One reply line, ending in '\n'. The allocation counter is read first, so that what this method
     * allocates afterwards (a few hundred bytes) counts towards the next reading, not this one: a
     * before/after pair thus includes one reply's worth of agent allocation, negligible per request.
     */
    String json() {
        long allocated = allocation == null ? -1 : settledAllocatedBytes(allocation);
        // Summed over every collector, skipping -1 (undefined). With G1 (JDK 20+) "G1 Concurrent GC"
        // counts the Remark and Cleanup pauses; ZGC has both "Cycles" and "Pauses" beans, whose sum
        // counts a collection twice: compare these numbers between servers on the same collector only.
        long gcCount = 0;
        long gcTime = 0;
        for (GarbageCollectorMXBean gc : collectors) {
            long count = gc.getCollectionCount();
            long time = gc.getCollectionTime();
            if (count >= 0) {
                gcCount += count;
            }
            if (time >= 0) {
                gcTime += time;
            }
        }
        long compileTime = compilation == null ? -1 : compilation.getTotalCompilationTime();
        // A StringBuilder, not '+': javac compiles '+' to an invokedynamic whose first call spins
        // classes (about 300 KB allocated on JDK 25, counted into the driver's first difference).
        return new StringBuilder(192)
                .append("{\"format\":\"").append(FORMAT).append('"')
                .append(",\"allocated_bytes\":").append(allocated)
                .append(",\"gc_count\":").append(gcCount)
                .append(",\"gc_time_ms\":").append(gcTime)
                .append(",\"compile_time_ms\":").append(compileTime)
                .append(",\"threads\":").append(threads.getThreadCount())
                .append(",\"uptime_ms\":").append(runtime.getUptime())
                .append("}\n")
                .toString();
    }

    /** getTotalThreadAllocatedBytes() of the bean, or null on a JDK without it. */
    static LongSupplier totalAllocatedBytes(com.sun.management.ThreadMXBean bean) {
        MethodHandle total;
        try {
            total = MethodHandles.publicLookup().findVirtual(com.sun.management.ThreadMXBean.class,
                    "getTotalThreadAllocatedBytes", MethodType.methodType(long.class)).bindTo(bean);
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null;
        }
        return () -> {
            try {
                return (long) total.invokeExact();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        };
    }

    /**
     * The allocation total once it has stopped moving for 1 ms (or after {@value #SETTLE_READINGS} readings).
     * HotSpot's total briefly misses a thread that is exiting: in a probe on JDK 25, 1.3% of readings taken
     * just after {@code join()} on a thread that allocated 4 MB missed those 4 MB, and every one of them had
     * caught up 1 ms later. A thread-per-connection server's thread exits as a block's connection closes,
     * just before the driver reads; an unsettled reading would move that block's bytes into the next one.
     */
    static long settledAllocatedBytes(LongSupplier allocation) {
        long last = allocation.getAsLong();
        for (int i = 1; i < SETTLE_READINGS; i++) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return last;
            }
            long now = allocation.getAsLong();
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
