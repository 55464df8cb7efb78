package org.latencydiff.agent;

import java.lang.management.ManagementFactory;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * How much work the JIT compilers have right now: the tasks being compiled and the tasks queued, from
 * HotSpot's {@code Compiler.queue} diagnostic command (what {@code jcmd <pid> Compiler.queue} prints), run
 * in-process through the DiagnosticCommand MBean. The driver asks during a warm-up only, to end it as
 * soon as the queue is empty, instead of waiting for the compiler threads' CPU time to stand still.
 *
 * <p>The command prints a "Current compiles:" section with one line per compiler thread at work,
 * then a "... compile queue:" section per compiler whose body is "Empty" or one line per task. A
 * query allocates (the MBean server on first use, the command's text): never between the driver's
 * two readings of {@link Counters}.
 */
final class CompileQueue {

    static final String FORMAT = "latency-diff/agent-jit/1";

    private CompileQueue() {}

    /** One reply line, ending in '\n': {@code {"format":...,"compiling":N,"queued":M}}, or -1 each when the
     * JVM has no such command (not HotSpot, or -Xint). */
    static String json() {
        int[] counts = read();
        return "{\"format\":\"" + FORMAT + "\",\"compiling\":" + counts[0] + ",\"queued\":" + counts[1] + "}\n";
    }

    private static int[] read() {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName command = new ObjectName("com.sun.management:type=DiagnosticCommand");
            Object text = server.invoke(command, "compilerQueue", new Object[] {null},
                    new String[] {String[].class.getName()});
            return count(String.valueOf(text));
        } catch (JMException | RuntimeException e) {
            return new int[] {-1, -1};
        }
    }

    /** {compiling, queued} from the command's text; package-private for the tests. */
    static int[] count(String text) {
        int compiling = 0;
        int queued = 0;
        String section = "";
        for (String raw : text.split("\n")) {
            String line = raw.strip();
            if (line.startsWith("Current compiles:")) {
                section = "current";
            } else if (line.endsWith("compile queue:")) {
                section = "queue";
            } else if (line.isEmpty() || line.equals("Empty")) {
                continue;
            } else if (section.equals("current")) {
                compiling++;
            } else if (section.equals("queue")) {
                queued++;
            }
        }
        return new int[] {compiling, queued};
    }
}
