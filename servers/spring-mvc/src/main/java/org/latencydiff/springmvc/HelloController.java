package org.latencydiff.springmvc;

import org.latencydiff.ReferenceResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** Spring MVC's HelloWorld: a controller method whose String return value is the body. */
@RestController
public class HelloController {

    private static final String BODY = ReferenceResponse.get().body();

    @GetMapping("/")
    public String hello() {
        return BODY;
    }
}
