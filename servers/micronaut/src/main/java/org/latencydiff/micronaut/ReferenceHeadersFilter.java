package org.latencydiff.micronaut;

import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.ResponseFilter;
import io.micronaut.http.annotation.ServerFilter;
import java.util.List;
import java.util.Map;
import org.latencydiff.ReferenceResponse;

/**
 * Sets the reference's constant headers on every response, Micronaut's way: a server filter. Content-Type
 * comes from the route's @Produces, so it is not set twice.
 */
@ServerFilter(ServerFilter.MATCH_ALL_PATTERN)
public class ReferenceHeadersFilter {

    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders().stream()
            .filter(h -> !h.getKey().equalsIgnoreCase("Content-Type"))
            .toList();

    @ResponseFilter
    public void addHeaders(MutableHttpResponse<?> response) {
        for (Map.Entry<String, String> h : headers) {
            response.header(h.getKey(), h.getValue());
        }
    }
}
