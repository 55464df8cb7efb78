"""The windows after a pair's measured phase, in the same two warm processes: counting the work per request
(counting.py) and profiling the server's CPU time (profiling.py). Each sends its own interleaved requests; their
round trips are never used, and nothing of them touches the measured phase before.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records import PairRecord
from . import counting, profiling
from .pair import Context, Prepared, check_alive


def _traffic(ctx: Context, base: Prepared, srv: Prepared, http: str, requests: int
             ) -> tuple[Callable[[], None], list[str]]:
    """A window's requests (the interleaved client, `requests` on each of its two connections: one to each process,
    or both to the server when `base` is the server), and where a failed client says why."""
    settings, problem = ctx.settings, []

    def serve() -> None:
        out = ctx.measure_clients.interleaved(base.port, srv.port, http, requests, settings.run_length,
                                              settings.segment, 0, {"base": base.record.response_bytes,
                                                                    "server": srv.record.response_bytes})
        if out.problem:
            problem.append(f"lean client: {out.problem}")
    return serve, problem


def _requests(ctx: Context, asked: int) -> int:
    """Whole segments of the interleaved client."""
    return -(-asked // ctx.settings.segment) * ctx.settings.segment


def _tool_cpu(ctx: Context) -> int | None:
    """Where perf and jcmd run: off the measured CPU."""
    return ctx.prepare_cpu if ctx.prepare_cpu != ctx.measure_cpu else None


def count(ctx: Context, base: Prepared, srv: Prepared, rec: PairRecord, http: str, stage: dict,
          say: Callable[[str], None]) -> None:
    """The counting window: both processes' system calls, switches and faults over an idle second and over
    --count-requests interleaved requests to each (counting.py); into rec.counts. A client that fails here is on
    record in rec.counts["problem"]; a process that died raises PairFailed."""
    stage["phase"] = "count"
    requests = _requests(ctx, ctx.settings.count_requests)
    say(f"{rec.server} pair {rec.pair}: counting the work of {requests:,} requests to each")
    serve, problem = _traffic(ctx, base, srv, http, requests)
    try:
        windows = counting.count_window({"base": base.proc.pid, "server": srv.proc.pid}, requests, serve,
                                        _tool_cpu(ctx))
    except OSError as e:  # a process that exited meanwhile
        check_alive(base, srv)
        windows, problem = {}, [f"counting: {e}"]
    check_alive(base, srv)
    rec.counts = {**windows, **({"problem": problem[0]} if problem else {})}


def profile(ctx: Context, base: Prepared, srv: Prepared, rec: PairRecord, http: str, stage: dict,
            say: Callable[[str], None]) -> None:
    """The profiling window: async-profiler in the server's JVM while the interleaved client sends it
    --profile-requests over two connections, both to the server: the dummy's requests would only add time
    (profiling.py). The collapsed stacks and the flame graph go to the run's profiles (kinds "stacks" and
    "flamegraph", the server process's tag), the stacks cut to what their groups need to its logs (kind "profile");
    rec.profile says how it went. A profiler that
    fails is on record in rec.profile["problem"]; a process that died raises PairFailed."""
    stage["phase"] = "profile"
    requests = 2 * _requests(ctx, -(-ctx.settings.profile_requests // 2))
    say(f"{rec.server} pair {rec.pair}: profiling {requests:,} requests")
    serve, problem = _traffic(ctx, srv, srv, http, requests // 2)
    rec.profile = {"requests": requests}
    try:
        got = profiling.profile(ctx.java, srv.proc.pid, serve, ctx.agent_dir, _tool_cpu(ctx))
    except profiling.ProfileError as e:
        check_alive(base, srv)
        rec.profile["problem"] = str(e)
        return
    check_alive(base, srv)
    tag = srv.record.tag
    ctx.writer.log("profile", tag, profiling.reduce(got["collapsed"]))
    ctx.writer.profile("stacks", tag, got["collapsed"])
    ctx.writer.profile("flamegraph", tag, got["html"].read_text())
    got["html"].unlink(missing_ok=True)
    rec.profile.update(event=got["event"], interval_ns=got["interval_ns"], seconds=got["seconds"], tag=tag,
                       **({"problem": problem[0]} if problem else {}))
