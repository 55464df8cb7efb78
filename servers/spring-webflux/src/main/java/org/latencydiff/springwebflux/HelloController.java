package org.latencydiff.springwebflux;

import org.latencydiff.ReferenceResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** WebFlux's annotated-controller HelloWorld: a controller method whose Mono<String> is the body. */
@RestController
public class HelloController {

    private static final String BODY = ReferenceResponse.get().body();

    @GetMapping("/")
    public Mono<String> hello() {
        return Mono.just(BODY);
    }
}
