package org.latencydiff.micronaut;

import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Produces;

/** Micronaut's HelloWorld: a controller whose @Get method returns the body. */
@Controller("/")
public class HelloController {

    /** The reference's Content-Type, exactly (an annotation value must be a constant). */
    static final String CONTENT_TYPE = "text/plain;charset=UTF-8";

    @Get
    @Produces(CONTENT_TYPE)
    public String index() {
        return "HelloWorld";
    }
}
