package org.latencydiff.netty41;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import org.latencydiff.HttpDate;
import org.latencydiff.Launcher;
import org.latencydiff.ReferenceResponse;

/**
 * Netty 4.1's HTTP codec pipeline as in its HttpHelloWorldServer example: NIO transport (the portable
 * one), HttpServerCodec and one handler that answers on the event loop. The netty module's server on
 * the 4.1 line, whose event loop groups are NioEventLoopGroup.
 */
public final class Netty41Server {

    public static void main(String[] args) {
        Launcher.run("netty41", args, options -> {
            HelloWorldHandler handler = new HelloWorldHandler(options.name());
            ServerBootstrap bootstrap = new ServerBootstrap()
                    // 4.1's NIO groups, sized as the netty module's 4.2 MultiThreadIoEventLoopGroup(NioIoHandler).
                    .group(new NioEventLoopGroup(1), new NioEventLoopGroup())
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), handler);
                        }
                    });
            Channel channel = bootstrap.bind(options.host(), options.port()).sync().channel();
            return ((InetSocketAddress) channel.localAddress()).getPort();
        });
    }

    @ChannelHandler.Sharable
    private static final class HelloWorldHandler extends SimpleChannelInboundHandler<HttpObject> {

        private final byte[] body = ReferenceResponse.get().bodyBytes();
        private final List<Map.Entry<AsciiString, String>> headers = ReferenceResponse.get().constantHeaders().stream()
                .map(h -> Map.entry(AsciiString.cached(h.getKey()), h.getValue()))
                .toList();
        private final String name;

        HelloWorldHandler(String name) {
            this.name = name;
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (!(msg instanceof HttpRequest request)) {
                return; // the LastHttpContent that ends each request
            }
            FullHttpResponse response = new DefaultFullHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.OK, Unpooled.wrappedBuffer(body));
            HttpHeaders out = response.headers();
            for (Map.Entry<AsciiString, String> h : headers) {
                out.set(h.getKey(), h.getValue());
            }
            out.set(HttpHeaderNames.SERVER, name)
                    .set(HttpHeaderNames.DATE, HttpDate.now())
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
            if (HttpUtil.isKeepAlive(request)) {
                // Sent for HTTP/1.1 too (where it is the default), as the reference response has it.
                out.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                ctx.write(response);
            } else {
                out.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.write(response).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            System.err.println(name + ": closing a connection after " + cause);
            ctx.close();
        }
    }
}
