package org.latencydiff.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class CompileQueueTest {

    /** What JDK 25's Compiler.queue printed for a JVM in the middle of its start-up (trimmed). */
    private static final String BUSY = """
            Current compiles:\s
            C2 CompilerThread0  1530   !   4       com.sun.tools.javac.jvm.ClassReader::classSigToType (530 bytes)

            C1 compile queue:
            1900       3       jdk.internal.util.DecimalDigits::stringSize (47 bytes)

            C2 compile queue:
            1527   !   4       com.sun.tools.javac.jvm.ClassReader::nextInt (40 bytes)
            1529       4       java.lang.String::<init> (74 bytes)
            1606       4       java.lang.Character::charCount (12 bytes)

            """;

    private static final String IDLE = """
            Current compiles:\s

            C1 compile queue:
            Empty

            C2 compile queue:
            Empty

            """;

    @Test
    void countsTheTasksAtWorkAndTheTasksQueued() {
        assertArrayEquals(new int[] {1, 4}, CompileQueue.count(BUSY));
        assertArrayEquals(new int[] {0, 0}, CompileQueue.count(IDLE));
        assertArrayEquals(new int[] {0, 0}, CompileQueue.count(""));
    }

    @Test
    void thisJvmAnswersWithCountsThatAreNotNegative() {
        Matcher m = Pattern.compile("\\{\"format\":\"latency-diff/agent-jit/1\",\"compiling\":(\\d+),\"queued\":(\\d+)}\n")
                .matcher(CompileQueue.json());
        assertTrue(m.matches(), CompileQueue.json());
    }
}
