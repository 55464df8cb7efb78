package org.latencydiff.akka;

import akka.actor.ActorSystem;
import akka.event.DefaultLoggingFilter;
import akka.event.EventStream;

/**
 * Akka's default log filter, except that the TCP listener's errors are not logged: the listener logs a
 * failed bind with its stack trace, and also fails the bind's CompletionStage, which {@link AkkaServer}
 * turns into Launcher's one-line error. Configured as {@code akka.logging-filter} in application.conf.
 */
public class BindFailureLogFilter extends DefaultLoggingFilter {

    private static final String TCP_LISTENER = "akka.io.TcpListener";

    public BindFailureLogFilter(ActorSystem.Settings settings, EventStream eventStream) {
        super(settings, eventStream);
    }

    @Override
    public boolean isErrorEnabled(Class<?> logClass, String logSource) {
        return !logClass.getName().equals(TCP_LISTENER) && super.isErrorEnabled(logClass, logSource);
    }
}
