@file:JvmName("Http4kNettyServer")

package org.latencydiff.http4knetty

import org.http4k.core.Filter
import org.http4k.core.HttpHandler
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.core.Status.Companion.OK
import org.http4k.core.then
import org.http4k.server.Http4kServer
import org.http4k.server.Netty
import org.http4k.server.asServer
import org.latencydiff.HttpDate
import org.latencydiff.Launcher
import org.latencydiff.ReferenceResponse

/**
 * http4k's HelloWorld: a function from Request to Response, the reference headers added by a Filter,
 * served with asServer(Netty(port)).
 */
fun main(args: Array<String>) {
    // Netty 4.1.93 would use sun.misc.Unsafe, which JDK 25 warns about on stderr; Netty 4.2 (the netty row) turns
    // it off by default on Java 25+, and this property, read before Netty loads, does the same here.
    if (System.getProperty("io.netty.noUnsafe") == null) System.setProperty("io.netty.noUnsafe", "true")
    var server: Http4kServer? = null
    Launcher.run("http4k-netty", args) { options ->
        val ref = ReferenceResponse.get()
        val headers = ref.constantHeaders().map { it.key to it.value }
        val name = options.name()

        val app: HttpHandler = { _: Request -> Response(OK).body(ref.body()) }
        // http4k's Netty adapter writes Content-Length (of the in-memory body) and Connection: keep-alive,
        // but no Date and no Server: the Filter adds those with the constant reference headers.
        val referenceHeaders = Filter { next ->
            { request -> next(request).headers(headers).header("Date", HttpDate.now()).header("Server", name) }
        }
        // Netty(port) takes no host: the adapter binds the port on every interface (--host is not used).
        val started = referenceHeaders.then(app).asServer(Netty(options.port())).start()
        server = started
        started.port()
    }
    // Netty's event-loop threads keep the JVM alive; http4k's block() waits as its examples do.
    server?.block()
}
