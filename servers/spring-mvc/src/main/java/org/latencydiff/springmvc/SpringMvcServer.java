package org.latencydiff.springmvc;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.latencydiff.Launcher;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.tomcat.TomcatProtocolHandlerCustomizer;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * A Spring Boot application with Spring MVC on its default embedded Tomcat, started with
 * {@link SpringApplication} as Spring Boot's getting-started guide does: {@link HelloController}
 * answers GET /, {@link ReferenceHeadersFilter} sets the reference headers. Component scanning
 * covers this package only (the one of this class).
 */
@SpringBootApplication
public class SpringMvcServer {

    /** The property that hands the server's name (the Server header) to {@link ReferenceHeadersFilter}. */
    static final String SERVER_NAME_PROPERTY = "latency-diff.server-name";

    /** Tomcat adds Keep-Alive: timeout=N to keep-alive answers; the reference has no such header. */
    @Bean
    TomcatProtocolHandlerCustomizer<AbstractHttp11Protocol<?>> noKeepAliveResponseHeader() {
        return protocol -> protocol.setUseKeepAliveResponseHeader(false);
    }

    public static void main(String[] args) {
        Launcher.run("spring-mvc", args, options -> {
            Map<String, String> properties = new LinkedHashMap<>();
            properties.put("server.address", options.host());
            properties.put("server.port", Integer.toString(options.port()));
            properties.put(SERVER_NAME_PROPERTY, options.name());
            // ab keeps one connection for the whole run; Tomcat closes it after 100 requests by default.
            properties.put("server.tomcat.max-keep-alive-requests", "-1");
            properties.put("logging.level.root", "WARN");
            // A failed start (a busy port) is reported in one line by Launcher, not by Spring Boot's
            // failure report and stack trace.
            properties.put("logging.level.org.springframework.boot.SpringApplication", "OFF");
            properties.put("logging.level.org.springframework.boot.diagnostics", "OFF");
            SpringApplication app = new SpringApplication(SpringMvcServer.class);
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
