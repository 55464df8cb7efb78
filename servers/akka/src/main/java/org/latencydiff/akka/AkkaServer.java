package org.latencydiff.akka;

import static akka.http.javadsl.server.Directives.complete;
import static akka.http.javadsl.server.Directives.get;
import static akka.http.javadsl.server.Directives.pathSingleSlash;
import static akka.http.javadsl.server.Directives.respondWithHeaders;

import akka.actor.ActorSystem;
import akka.http.javadsl.Http;
import akka.http.javadsl.ServerBinding;
import akka.http.javadsl.model.ContentType;
import akka.http.javadsl.model.ContentTypes;
import akka.http.javadsl.model.HttpCharsets;
import akka.http.javadsl.model.HttpEntities;
import akka.http.javadsl.model.HttpHeader;
import akka.http.javadsl.model.MediaTypes;
import akka.http.javadsl.model.ResponseEntity;
import akka.http.javadsl.model.headers.RawHeader;
import akka.http.javadsl.server.Route;
import akka.stream.BindFailedException;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.net.BindException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Akka HTTP's HelloWorld in its Java routing DSL: {@code pathSingleSlash(() -> get(() -> complete(...)))}
 * inside {@code respondWithHeaders} for the reference's constant headers, bound with
 * {@code Http.get(system).newServerAt(host, port).bind(route)}. Akka HTTP writes Date, Content-Length,
 * Connection and Server (from {@code akka.http.server.server-header}) itself.
 */
public final class AkkaServer {

    private AkkaServer() {}

    public static void main(String[] args) {
        Launcher.run("akka", args, options -> {
            // application.conf (log level and filter) with the Server header's value, the server's name.
            Config config = ConfigFactory.parseMap(Map.of("akka.http.server.server-header", options.name()))
                    .withFallback(ConfigFactory.load());
            ActorSystem system = ActorSystem.create("akka", config);
            // On SIGTERM the JVM's shutdown hook runs Akka's coordinated shutdown, which stops the
            // ActorSystem (akka.coordinated-shutdown.run-by-jvm-shutdown-hook, on by default).
            ServerBinding binding;
            try {
                binding = Http.get(system).newServerAt(options.host(), options.port()).bind(route())
                        .toCompletableFuture().get();
            } catch (ExecutionException e) {
                system.terminate();
                throw busyPort(e.getCause());
            }
            return binding.localAddress().getPort();
        });
    }

    static Route route() {
        ReferenceResponse ref = ReferenceResponse.get();
        List<HttpHeader> headers = ref.constantHeaders().stream()
                .filter(h -> !h.getKey().equalsIgnoreCase("Content-Type"))
                .map(h -> (HttpHeader) RawHeader.create(h.getKey(), h.getValue()))
                .toList();
        ResponseEntity body = HttpEntities.create(contentType(ref.header("Content-Type")), ref.bodyBytes());
        return respondWithHeaders(headers, () -> pathSingleSlash(() -> get(() -> complete(body))));
    }

    /**
     * The reference's {@code text/plain;charset=UTF-8}. Akka HTTP renders a text type with its charset as
     * {@code text/plain; charset=UTF-8} (with a space), so the value is a media type with a fixed charset
     * whose rendering is the reference's bytes.
     */
    static ContentType contentType(String value) {
        int slash = value.indexOf('/');
        return ContentTypes.create(MediaTypes.customWithFixedCharset(
                value.substring(0, slash), value.substring(slash + 1), HttpCharsets.UTF_8, Map.of(), false));
    }

    /** Akka's bind failure as the {@link BindException} that Launcher reports as a busy port. */
    private static Exception busyPort(Throwable cause) {
        if (cause instanceof BindFailedException) {
            for (Throwable c = cause; c != null; c = c.getCause()) {
                if (c instanceof BindException b) {
                    return b;
                }
            }
            BindException b = new BindException(cause.getMessage());
            b.initCause(cause);
            return b;
        }
        return cause instanceof Exception e ? e : new RuntimeException(cause);
    }
}
