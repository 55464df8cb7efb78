@file:JvmName("KtorServer")

package org.latencydiff.ktor

import io.ktor.http.HttpHeaders
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.cio.CIO
import io.ktor.server.engine.ApplicationEngine
import io.ktor.server.engine.ApplicationEngineFactory
import io.ktor.server.engine.EmbeddedServer
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.response.header
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import java.util.concurrent.CountDownLatch
import kotlinx.coroutines.runBlocking
import org.latencydiff.HttpDate
import org.latencydiff.Launcher
import org.latencydiff.ReferenceResponse
import org.latencydiff.ServerOptions

/**
 * Ktor's embeddedServer with one route, as Ktor's HelloWorld shows, on its Netty engine (the default)
 * or with `--variant cio` on CIO, Ktor's own coroutine-based engine.
 */
fun main(args: Array<String>) {
    var server: EmbeddedServer<*, *>? = null
    Launcher.run("ktor-netty", args) { options ->
        val variant = if (options.variant().isEmpty()) "netty" else options.variantOneOf("netty", "cio")
        val started = if (variant == "cio") start(CIO, options) else start(Netty, options)
        server = started
        runBlocking { started.engine.resolvedConnectors().first().port }
    }
    // CIO runs on coroutine threads, which are daemons: wait until the application stops (Ktor's own
    // shutdown hook stops it on SIGTERM).
    val stopped = CountDownLatch(1)
    server?.monitor?.subscribe(ApplicationStopped) { stopped.countDown() }
    stopped.await()
}

private fun <E : ApplicationEngine, C : ApplicationEngine.Configuration> start(
    engine: ApplicationEngineFactory<E, C>,
    options: ServerOptions,
): EmbeddedServer<E, C> {
    val ref = ReferenceResponse.get()
    val contentType = ref.header(HttpHeaders.ContentType)
    val headers = ref.constantHeaders().filter { it.key != HttpHeaders.ContentType }
    val body = ref.body()
    val name = options.name()
    return embeddedServer(engine, port = options.port(), host = options.host()) {
        routing {
            get("/") {
                for ((header, value) in headers) {
                    call.response.header(header, value)
                }
                call.response.header(HttpHeaders.Server, name)
                // Ktor itself writes neither Date nor Server (its DefaultHeaders plugin would, but
                // ktor-server-default-headers has no 3.5 release on Maven Central); it writes
                // Content-Length, and Connection: keep-alive in answer to ab's Connection: Keep-Alive.
                call.response.header(HttpHeaders.Date, HttpDate.now())
                // Ktor renders a ContentType object as "text/plain; charset=UTF-8" (with a space); the
                // reference has none, so the header is set as text. safeOnly = false: Ktor otherwise
                // reserves Content-Type for the content.
                call.response.headers.append(HttpHeaders.ContentType, contentType, safeOnly = false)
                call.respondText(body)
            }
        }
    }.start(wait = false)
}
