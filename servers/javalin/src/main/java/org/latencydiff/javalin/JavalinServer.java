package org.latencydiff.javalin;

import io.javalin.Javalin;
import io.javalin.util.JavalinLogger;
import java.util.List;
import java.util.Map;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Javalin's HelloWorld: one route in Javalin.create(config -> ...), the reference headers set by an
 * after-handler, on Javalin's embedded Jetty bound through config.jetty.
 */
public final class JavalinServer {

    public static void main(String[] args) {
        Launcher.run("javalin", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            String body = ref.body();
            String name = options.name();

            Javalin app = Javalin.create(config -> {
                config.jetty.host = options.host();
                config.jetty.port = options.port();
                config.startup.showJavalinBanner = false;
                config.routes.get("/", ctx -> ctx.result(body));
                config.routes.after(ctx -> {
                    for (Map.Entry<String, String> h : headers) {
                        ctx.header(h.getKey(), h.getValue());
                    }
                    // Javalin turns off Jetty's own Server header; Jetty writes Date, Content-Length
                    // and Connection itself.
                    ctx.header("Server", name);
                });
            });
            // Javalin logs "Failed to start Javalin" before it throws (a busy port): its logger is off
            // for the start only, and the Launcher says why in one line.
            JavalinLogger.enabled = false;
            try {
                app.start();
            } finally {
                JavalinLogger.enabled = true;
            }
            return app.port();
        });
    }
}
