package org.latencydiff.sparkjava;

import static spark.Spark.after;
import static spark.Spark.awaitInitialization;
import static spark.Spark.get;
import static spark.Spark.initExceptionHandler;
import static spark.Spark.ipAddress;
import static spark.Spark.port;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * SparkJava's HelloWorld: get("/", (req, res) -> ...) with an after-filter for the reference headers,
 * on Spark's embedded Jetty 9.
 */
public final class SparkJavaServer {

    public static void main(String[] args) {
        Launcher.run("sparkjava", args, options -> {
            ReferenceResponse ref = ReferenceResponse.get();
            List<Map.Entry<String, String>> headers = ref.constantHeaders();
            String body = ref.body();
            String length = String.valueOf(ref.bodyBytes().length);
            String name = options.name();

            // Spark's default logs the failure with its stack trace and calls System.exit(100); keep the
            // exception instead, so that the Launcher reports it in one line.
            AtomicReference<Exception> failure = new AtomicReference<>();
            initExceptionHandler(failure::set);
            ipAddress(options.host());
            port(options.port());

            get("/", (req, res) -> body);
            after((req, res) -> {
                for (Map.Entry<String, String> h : headers) {
                    res.header(h.getKey(), h.getValue());
                }
                // Replaces Jetty's own "Server: Jetty(9...)"; Jetty writes Date and Connection itself.
                res.header("Server", name);
                // Spark flushes the body it serializes, so Jetty sends it without a length (chunked, or
                // ended by a close for HTTP/1.0) unless the route's body length is declared here.
                res.header("Content-Length", length);
            });

            awaitInitialization();
            if (failure.get() != null) {
                throw failure.get();
            }
            return port();
        });
    }
}
