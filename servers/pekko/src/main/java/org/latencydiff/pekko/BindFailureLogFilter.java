package org.latencydiff.pekko;

import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.event.DefaultLoggingFilter;
import org.apache.pekko.event.EventStream;

/**
 * Pekko's default log filter, except that the TCP listener's errors are not logged: the listener logs a
 * failed bind with its stack trace, and also fails the bind's CompletionStage, which {@link PekkoServer}
 * turns into Launcher's one-line error. Configured as {@code pekko.logging-filter} in application.conf.
 */
public class BindFailureLogFilter extends DefaultLoggingFilter {

    private static final String TCP_LISTENER = "org.apache.pekko.io.TcpListener";

    public BindFailureLogFilter(ActorSystem.Settings settings, EventStream eventStream) {
        super(settings, eventStream);
    }

    @Override
    public boolean isErrorEnabled(Class<?> logClass, String logSource) {
        return !logClass.getName().equals(TCP_LISTENER) && super.isErrorEnabled(logClass, logSource);
    }
}
