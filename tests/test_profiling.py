"""Where the time goes (latency_diff/measure/profiling.py): the grouping of samples on known stacks, the package table,
and a real profile's stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from latency_diff.measure import profiling

FIXTURES = Path(__file__).parent / "fixtures" / "profile"


def test_each_sample_goes_to_the_group_of_its_thread_and_innermost_frames():
    text = (FIXTURES / "handmade.collapsed").read_text()
    samples, shares = profiling.where_time_goes(text, profiling.packages("io.undertow:undertow-core"))
    assert samples == 100
    assert shares == {
        "kernel": 0.30,                  # the epoll_wait leaf is the kernel's
        "JDK networking and NIO": 0.10,  # libc's write under SocketDispatcher.write0: the innermost Java frame
        "JDK other": 0.05,               # HashMap.get inlined into Undertow's code
        "server library": 0.25,          # Undertow's own frame (XNIO is Undertow's too)
        "framework": 0.0,
        "other libraries": 0.10,         # the kit's main class (4) and Jackson (6)
        "JVM and native": 0.02,          # a request thread with no Java frame
        "GC and VM": 0.08,
        "JIT compiler": 0.10,
    }
    assert list(shares) == list(profiling.GROUPS)


def test_a_framework_s_own_code_and_the_servers_below_it():
    stacks = ("[t tid=1];io/netty/channel/nio/NioEventLoop.run_[j];io/vertx/core/impl/ContextImpl.emit_[j];"
              "io/quarkus/vertx/http/runtime/VertxHttpRecorder.handle_[j] 3\n"
              "[t tid=1];io/netty/channel/nio/NioEventLoop.run_[j];io/vertx/core/impl/ContextImpl.emit_[j] 1\n"
              "[t tid=1];io/netty/channel/nio/NioEventLoop.run_[j] 1\n")
    below = profiling.packages("io.vertx:vertx-core") + profiling.packages("io.netty:netty-codec-http")
    _, shares = profiling.where_time_goes(stacks, below, profiling.packages("io.quarkus:quarkus-rest"))
    assert (shares["framework"], shares["server library"]) == (0.6, 0.4)


def test_stacks_cut_to_their_groups_frames_keep_every_samples_group():
    """The logs keep the stacks reduce() cuts; the groups must come out as from the full stacks, whatever packages
    the analysis takes for the server and the framework (they may change after the run)."""
    text = (FIXTURES / "handmade.collapsed").read_text()
    cut = profiling.reduce(text)
    assert len(cut) < len(text) and profiling.reduce(cut) == cut
    assert sum(n for _, n in profiling.parse_collapsed(cut)) == 100
    for server, framework in ((profiling.packages("io.undertow:undertow-core"), ()), (profiling.JDK_SERVER, ()),
                              (("com/fasterxml/",), ("org/latencydiff/",)), ((), ())):
        assert profiling.where_time_goes(cut, server, framework) == profiling.where_time_goes(text, server, framework)
    # A stack's middle frames go, and its thread's id; its thread, innermost Java frame and a kernel leaf (as one
    # name) stay, and stacks cut alike add up. A native leaf goes too, unless nothing else would be left.
    deep = ("[w tid=2];a/A.run_[j];io/undertow/X.handle_[j];java/util/HashMap.get_[i];libc_write;sys_write_[k] 2\n"
            "[w tid=3];a/A.run_[j];b/B.call_[j];io/undertow/X.handle_[j];java/util/HashMap.get_[i];libc_read;"
            "sys_write_[k] 3\n"
            "[w tid=2];a/A.run_[j];libc_write 1\n"
            "libjvm.so;Interpreter 1\n")
    deep += "[w tid=2];java/util/HashMap.get_[i];do_syscall_64_[k] 1\n"
    assert profiling.reduce(deep) == ("Interpreter 1\n[w];a/A.run_[j] 1\n"
                                      "[w];java/util/HashMap.get_[i];kernel_[k] 6\n")


def test_packages_of_a_library():
    assert profiling.packages("org.rapidoid:rapidoid-http-fast") == ("org/rapidoid/",)
    assert "org/apache/coyote/" in profiling.packages("org.apache.tomcat.embed:tomcat-embed-core")
    assert profiling.packages(None, "jdk-vt") == profiling.JDK_SERVER  # the JDK's own server is the library
    _, shares = profiling.where_time_goes("[t tid=1];sun/net/httpserver/ServerImpl$Exchange.run_[j] 2\n",
                                          profiling.packages(None, "jdk"))
    assert shares["server library"] == 1.0


def test_collapsed_stacks_are_read_strictly():
    with pytest.raises(ValueError, match="line 2: no sample count"):
        profiling.parse_collapsed("a;b 3\na;b\n")
    assert profiling.where_time_goes("", ("x/",)) == (0, {g: 0.0 for g in profiling.GROUPS})


def test_per_request_splits_the_cpu_outside_the_jit_and_keeps_the_measured_jit():
    # The window: 40% JIT compiler (its own compiles), 30% kernel, 30% server library. The measured pairs: 10,000 ns
    # a request, 200 of it the JIT's. Outside the JIT: 9.8 us, split 30:30 of the 60% -> 4.9 and 4.9; JIT 0.2.
    shares = {g: 0.0 for g in profiling.GROUPS} | {"JIT compiler": 0.4, "kernel": 0.3, "server library": 0.3}
    us = profiling.per_request(shares, 10_000.0, 200.0)
    assert us["kernel"] == pytest.approx(4.9) and us["server library"] == pytest.approx(4.9)
    assert us["JIT compiler"] == pytest.approx(0.2) and us["GC and VM"] == 0.0
    assert sum(us.values()) == pytest.approx(10.0)  # the measured CPU per request, every group together
    only_jit = profiling.per_request({"JIT compiler": 1.0, "kernel": 0.0}, 10_000.0, 200.0)
    assert only_jit == {"JIT compiler": pytest.approx(0.2), "kernel": 0.0}
