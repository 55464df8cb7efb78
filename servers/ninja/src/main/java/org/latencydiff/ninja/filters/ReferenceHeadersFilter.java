package org.latencydiff.ninja.filters;

import com.google.inject.Inject;
import com.google.inject.Singleton;
import java.util.Map;
import ninja.Context;
import ninja.Filter;
import ninja.FilterChain;
import ninja.Result;
import ninja.utils.NinjaProperties;
import org.latencydiff.ReferenceResponse;
import org.latencydiff.ninja.NinjaServer;

/**
 * Adds the reference headers to the controller's Result. Content-Type is the Result's content type and
 * charset; with a Cache-Control of its own the Result gets none of Ninja's no-cache headers (Cache-Control,
 * Date, Expires); Jetty writes Date and Content-Length, and keeps the connection alive.
 */
@Singleton
public class ReferenceHeadersFilter implements Filter {

    private final Map<String, String> headers = new java.util.LinkedHashMap<>();
    private final String contentType;
    private final String charset;

    @Inject
    public ReferenceHeadersFilter(NinjaProperties properties) {
        ReferenceResponse.get().constantHeaders().forEach(h -> headers.put(h.getKey(), h.getValue()));
        String[] type = headers.remove("Content-Type").split(";charset=", 2);
        contentType = type[0];
        charset = type[1];
        headers.put("Server", properties.getOrDie(NinjaServer.SERVER_NAME_KEY));
    }

    @Override
    public Result filter(FilterChain chain, Context context) {
        Result result = chain.next(context).contentType(contentType).charset(charset);
        headers.forEach(result::addHeader);
        return result;
    }
}
