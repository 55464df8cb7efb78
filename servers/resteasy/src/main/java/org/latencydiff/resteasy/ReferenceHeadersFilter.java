package org.latencydiff.resteasy;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.ext.Provider;
import java.util.List;
import java.util.Map;
import org.latencydiff.ReferenceResponse;

/**
 * Sets the reference's constant headers and Server on every response. Content-Type is left to the
 * resource's {@code @Produces}; Undertow writes Date, Content-Length and, for ab's HTTP/1.0 keep-alive
 * request, Connection: keep-alive itself.
 */
@Provider
public class ReferenceHeadersFilter implements ContainerResponseFilter {

    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders().stream()
            .filter(h -> !h.getKey().equalsIgnoreCase(HttpHeaders.CONTENT_TYPE))
            .toList();
    private final String serverName;

    public ReferenceHeadersFilter(String serverName) {
        this.serverName = serverName;
    }

    @Override
    public void filter(ContainerRequestContext request, ContainerResponseContext response) {
        MultivaluedMap<String, Object> out = response.getHeaders();
        for (Map.Entry<String, String> h : headers) {
            out.putSingle(h.getKey(), h.getValue());
        }
        out.putSingle("Server", serverName);
    }
}
