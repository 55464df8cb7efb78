package org.latencydiff.resteasy;

import jakarta.ws.rs.core.Application;
import java.util.Set;

/** The JAX-RS application: the resource and the response filter, as instances (the filter needs the name). */
public class HelloApplication extends Application {

    private final Set<Object> singletons;

    public HelloApplication(String serverName) {
        this.singletons = Set.of(new HelloResource(), new ReferenceHeadersFilter(serverName));
    }

    @Override
    public Set<Object> getSingletons() {
        return singletons;
    }
}
