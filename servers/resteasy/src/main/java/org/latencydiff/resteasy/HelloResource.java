package org.latencydiff.resteasy;

import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import org.latencydiff.ReferenceResponse;

/** JAX-RS's HelloWorld: a root resource whose String return value is the body. */
@Path("/")
public class HelloResource {

    private static final String BODY = ReferenceResponse.get().body();

    /** The reference's Content-Type, as JAX-RS declares it; RESTEasy writes it as given. */
    @GET
    @Produces("text/plain;charset=UTF-8")
    public String hello() {
        return BODY;
    }
}
