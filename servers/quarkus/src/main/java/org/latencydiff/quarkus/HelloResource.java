package org.latencydiff.quarkus;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;

/**
 * Quarkus's HelloWorld: a Quarkus REST (JAX-RS) resource. As in Quarkus's guide, a method that returns a
 * plain value (not a Uni) runs on a worker thread, not on the Vert.x event loop.
 */
@Path("/")
public class HelloResource {

    /** The reference's Content-Type, exactly (an annotation value must be a constant). */
    static final String CONTENT_TYPE = "text/plain;charset=UTF-8";

    @GET
    @Produces(CONTENT_TYPE)
    public String hello() {
        return "HelloWorld";
    }
}
