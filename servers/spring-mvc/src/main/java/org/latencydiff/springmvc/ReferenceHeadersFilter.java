package org.latencydiff.springmvc;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.latencydiff.ReferenceResponse;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpHeaders;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Sets the reference's constant headers and Server on every response, before the controller runs.
 * Content-Type is among them: Spring MVC keeps a concrete Content-Type set before the controller
 * writes its String, so the value is the reference's byte for byte. Tomcat writes Date,
 * Content-Length and, for ab's HTTP/1.0 keep-alive request, Connection: keep-alive itself.
 */
@Component
public class ReferenceHeadersFilter extends OncePerRequestFilter {

    private final List<Map.Entry<String, String>> headers = ReferenceResponse.get().constantHeaders();
    private final String serverName;

    public ReferenceHeadersFilter(@Value("${" + SpringMvcServer.SERVER_NAME_PROPERTY + "}") String serverName) {
        this.serverName = serverName;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        for (Map.Entry<String, String> h : headers) {
            response.setHeader(h.getKey(), h.getValue());
        }
        response.setHeader(HttpHeaders.SERVER, serverName);
        chain.doFilter(request, response);
    }
}
