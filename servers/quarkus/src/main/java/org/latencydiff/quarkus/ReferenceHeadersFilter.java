package org.latencydiff.quarkus;

import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MultivaluedMap;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.resteasy.reactive.server.ServerResponseFilter;
import org.latencydiff.HttpDate;
import org.latencydiff.ReferenceResponse;

/**
 * Sets the reference headers on every response, Quarkus REST's way: a response filter. Content-Type comes
 * from the resource's @Produces; Vert.x writes Content-Length and Connection, but no Date or Server.
 */
public class ReferenceHeadersFilter {

    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders().stream()
            .filter(h -> !h.getKey().equalsIgnoreCase(HttpHeaders.CONTENT_TYPE))
            .toList();

    @ConfigProperty(name = QuarkusServer.SERVER_NAME_PROPERTY)
    String serverName;

    @ServerResponseFilter
    public void addHeaders(ContainerResponseContext response) {
        MultivaluedMap<String, Object> out = response.getHeaders();
        for (Map.Entry<String, String> h : headers) {
            out.putSingle(h.getKey(), h.getValue());
        }
        out.putSingle("Server", serverName);
        out.putSingle(HttpHeaders.DATE, HttpDate.now());
    }
}
