@file:JvmName("Http4kServer")

package org.latencydiff.http4k

import org.eclipse.jetty.server.HttpConfiguration
import org.eclipse.jetty.server.HttpConnectionFactory
import org.eclipse.jetty.server.ServerConnector
import org.http4k.core.Filter
import org.http4k.core.HttpHandler
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.core.Status.Companion.OK
import org.http4k.core.then
import org.http4k.server.ConnectorBuilder
import org.http4k.server.Http4kServer
import org.http4k.server.Jetty
import org.http4k.server.asServer
import org.latencydiff.Launcher
import org.latencydiff.ReferenceResponse

/**
 * http4k's HelloWorld: a function from Request to Response, the reference headers added by a Filter,
 * served with asServer(Jetty(port)).
 */
fun main(args: Array<String>) {
    var server: Http4kServer? = null
    Launcher.run("http4k-jetty", args) { options ->
        val ref = ReferenceResponse.get()
        val headers = ref.constantHeaders().map { it.key to it.value }
        val name = options.name()

        val app: HttpHandler = { _: Request -> Response(OK).body(ref.body()) }
        val referenceHeaders = Filter { next ->
            { request ->
                val response = next(request).headers(headers).header("Server", name)
                // http4k's Jetty adapter streams the body without a length, which an HTTP/1.0 client only
                // sees ended by a close; the length known to the body is sent as Content-Length.
                response.body.length?.let { response.header("Content-Length", it.toString()) } ?: response
            }
        }
        // http4k's http(port) connector binds every interface; a ConnectorBuilder of our own binds the
        // given host, and turns off Jetty's own "Server: Jetty(12...)" (the Filter sets the reference's).
        // Jetty writes Date (cached per second) and Connection itself.
        val loopback: ConnectorBuilder = { jetty ->
            val config = HttpConfiguration().apply { sendServerVersion = false }
            ServerConnector(jetty, HttpConnectionFactory(config)).apply {
                host = options.host()
                port = options.port()
            }
        }
        val started = referenceHeaders.then(app).asServer(Jetty(options.port(), loopback)).start()
        server = started
        started.port()
    }
    // Jetty's pool threads keep the JVM alive; http4k's block() waits as its examples do.
    server?.block()
}
