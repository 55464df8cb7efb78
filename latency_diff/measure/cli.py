"""Measures every server in process pairs against the dummy baseline, writes the raw results of one run, analyzes.

Each server is measured beside a baseline dummy in process pairs (fresh processes on both sides),
pinned alike: the interleaved lean client alternates between the two in short runs of requests in
ABBA order, and ab adds ABBA quads of blocks as a cross-check. Every server gets --min-pairs pairs;
then servers whose diff is not yet within the precision target get more, while their --budget
lasts. The diffs are scaled by each pair's own baseline round trip, so that a machine that runs
faster or slower for a while does not move them. Everything raw goes into results/<UTC time>/; then
the analysis renders the tables and plots. Every option can also be set by an environment variable
(LATENCY_DIFF_<OPTION>, e.g. LATENCY_DIFF_BUDGET=120); a flag wins.

Pinning: shared puts the client and both servers on one CPU (a round trip is the sum of client and
server CPU work, so the diff is the server's work per request), and prepares the next processes on
another; split puts the client on one CPU and the servers on another (the 2014 study's set-up: the
diff is critical-path latency, including the cross-CPU wake-up); none leaves placement to the
scheduler.
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from .. import KIT_ROOT, lean, rundir
from ..servers import agent_jar, discover
from ..settings import RunError, Settings, build_parser, print_settings, resolve
from . import busy, ports
from .driver import Interrupted, Run
from .process import java_executable

LOCK_FILE = Path(os.environ.get("LATENCY_DIFF_LOCK_FILE") or Path(tempfile.gettempdir()) / "latency-diff.lock")


def _raise_interrupted(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def acquire_lock(allow: bool):
    f = LOCK_FILE.open("a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "unknown"
        if not allow:
            f.close()
            raise RunError(f"another latency-diff run is going (pid {holder}); two runs on one machine disturb "
                           "each other's timing. Wait for it, or pass --allow-concurrent.") from None
        return f
    f.truncate(0)
    f.write(str(os.getpid()))
    f.flush()
    return f


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def check_ready(settings: Settings) -> None:
    """What must hold before anything starts: free ports, built programs. Raises RunError."""
    last = settings.port + ports.PORTS - 1
    for port in range(settings.port, last + 1):
        if not ports.free(port):
            holder = ports.holder(port)
            raise RunError(f"port {port} on 127.0.0.1 is already in use{' by ' + holder if holder else ''}; "
                           f"the run needs ports {settings.port} to {last}: stop that, or choose another with --port")
    needed = [s.artifact for s in settings.servers] + [agent_jar(), lean.EXECUTABLE]
    missing = [str(p.relative_to(KIT_ROOT)) for p in dict.fromkeys(needed) if not p.is_file()]
    if missing:
        raise RunError(f"missing: {', '.join(missing)}; build with scripts/build.sh")


def main(argv: list[str] | None = None) -> int:
    args = build_parser(__doc__ or "").parse_args(argv)
    try:
        if args.list or os.environ.get("LATENCY_DIFF_LIST", "").strip().lower() in ("1", "true", "yes", "on"):
            print("Servers (a variant: NAME@VERSION where a version property is named, NAME:java=JDK, NAME:jvm=FLAGS):")
            for s in discover():
                versions = f"  [{s.version_property}: {s.pom_version()}]" if s.version_property else ""
                print(f"  {s.name:16} {s.threading:16} HTTP/{s.http}  {s.display}{versions}")
                if s.matrix_only:  # left out of a run of every server
                    print(f"  {'':16} measured only when named in --servers: {s.matrix_only}")
            return 0
        settings = resolve(args)
        check_ready(settings)
        lock = acquire_lock(settings.allow_concurrent)
        run_dir = rundir.create(settings.results_dir)
    except (RunError, rundir.RunDirError) as e:
        print(f"latency-diff: error: {e}", file=sys.stderr)
        return 2
    java = java_executable()
    print_settings(settings, run_dir.name, java, sys.stderr)
    run = Run(settings, run_dir, java)
    # SIGINT too: a run started in the background by a script inherits SIGINT ignored, and `kill -INT` must
    # still stop it cleanly.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)
    started = _utc()
    # Other processes' CPU time while the run measures (busy.py), from a thread kept off the measured CPUs.
    sampler = busy.Sampler(avoid={c for c in (settings.client_cpu, settings.server_cpu) if c is not None})
    try:
        run.describe(java)
        run.status("running", started_utc=started, pid=os.getpid())
        sampler.start()
        try:
            run.measure()
        finally:  # before any status below writes run.json, however the measuring ended
            summary = sampler.stop()
            if summary is not None:
                run.env["busy"] = summary
    except (KeyboardInterrupt, Interrupted) as e:
        reason = "interrupted by " + (str(e) if isinstance(e, Interrupted) else "SIGINT")
        stage = run.stopped_at or dict(run.waiting_for.stage if run.waiting_for else run.stage)
        run.stop_all()
        run.status("incomplete", started_utc=started, reason=reason, stopped_at=stage, ended_utc=_utc())
        print(f"\nlatency-diff: {reason} during {stage.get('phase')} of {stage.get('server') or '-'} pair "
              f"{stage.get('pair') or '-'}. Finished pairs are kept in {run_dir} (marked incomplete); "
              f"analyze them with scripts/analyze.py {run_dir}", file=sys.stderr)
        return 130
    except OSError as e:  # a full disk, an unwritable results directory, a missing tool
        stage = run.stopped_at or run.stage
        run.stop_all()
        try:
            run.status("incomplete", started_utc=started, reason=f"error: {e}", stopped_at=stage)
        except OSError:
            pass  # the disk may be what failed; the message below still says what happened
        print(f"latency-diff: error: {e} (during {stage.get('phase')} of {stage.get('server') or '-'}); finished "
              f"pairs are kept in {run_dir}", file=sys.stderr)
        return 1
    except BaseException as e:
        run.stop_all()
        run.status("incomplete", started_utc=started, reason=f"driver error: {e!r}", stopped_at=run.stage)
        raise
    finally:
        run.close()
        lock.close()
    seconds = time.monotonic() - run.progress.started
    run.status("complete", started_utc=started, ended_utc=_utc(), load_average_end=list(os.getloadavg()),
               seconds=round(seconds, 1))
    print(f"\nlatency-diff: measurements done in {seconds / 60:.1f} min; raw results in {run_dir}", file=sys.stderr)
    from ..analysis import analyze  # needs the analysis packages (scipy), installed by run-all.sh
    return analyze.main([str(run_dir)])


if __name__ == "__main__":
    sys.exit(main())
