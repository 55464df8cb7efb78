package org.latencydiff.springwebflux;

import java.util.LinkedHashMap;
import java.util.Map;
import org.latencydiff.Launcher;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A Spring Boot application with Spring WebFlux on its default Reactor Netty server, started with
 * {@link SpringApplication}: the annotated controller {@link HelloController} answers GET / (the
 * first HelloWorld of the WebFlux reference documentation, and the same programming model as the
 * spring-mvc server), {@link ReferenceHeadersWebFilter} sets the reference headers. Component
 * scanning covers this package only (the one of this class).
 */
@SpringBootApplication
public class SpringWebFluxServer {

    /** The property that hands the server's name (the Server header) to {@link ReferenceHeadersWebFilter}. */
    static final String SERVER_NAME_PROPERTY = "latency-diff.server-name";

    public static void main(String[] args) {
        Launcher.run("webflux", args, options -> {
            Map<String, String> properties = new LinkedHashMap<>();
            properties.put("server.address", options.host());
            properties.put("server.port", Integer.toString(options.port()));
            properties.put(SERVER_NAME_PROPERTY, options.name());
            properties.put("logging.level.root", "WARN");
            // A failed start (a busy port) is reported in one line by Launcher, not by Spring Boot's
            // failure report and stack trace.
            properties.put("logging.level.org.springframework.boot.SpringApplication", "OFF");
            properties.put("logging.level.org.springframework.boot.diagnostics", "OFF");
            SpringApplication app = new SpringApplication(SpringWebFluxServer.class);
            app.setBannerMode(Banner.Mode.OFF);
            app.setLogStartupInfo(false);
            // As command-line properties: they take precedence over any application.properties or environment.
            ConfigurableApplicationContext context = app.run(properties.entrySet().stream()
                    .map(p -> "--" + p.getKey() + "=" + p.getValue())
                    .toArray(String[]::new));
            return ((WebServerApplicationContext) context).getWebServer().getPort();
        });
    }
}
