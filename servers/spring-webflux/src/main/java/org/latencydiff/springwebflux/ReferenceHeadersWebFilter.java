package org.latencydiff.springwebflux;

import java.util.List;
import java.util.Map;
import org.latencydiff.HttpDate;
import org.latencydiff.ReferenceResponse;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpHeaders;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Sets the reference's constant headers, Server and Date on every response, before the controller
 * runs. Content-Type is among them: WebFlux keeps a concrete Content-Type set before the body is
 * encoded, so the value is the reference's byte for byte. Reactor Netty writes no Date of its own;
 * Spring writes Content-Length.
 */
@Component
public class ReferenceHeadersWebFilter implements WebFilter {

    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders();
    private final String serverName;

    public ReferenceHeadersWebFilter(@Value("${" + SpringWebFluxServer.SERVER_NAME_PROPERTY + "}") String serverName) {
        this.serverName = serverName;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        HttpHeaders out = exchange.getResponse().getHeaders();
        for (Map.Entry<String, String> h : headers) {
            out.set(h.getKey(), h.getValue());
        }
        out.set(HttpHeaders.SERVER, serverName);
        out.set(HttpHeaders.DATE, HttpDate.now());
        return chain.filter(exchange);
    }
}
