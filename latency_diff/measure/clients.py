"""The clients, one invocation at a time: the lean C client (one connection, or two interleaved) and `ab -k -c1`.

Each invocation is one client process, pinned to its lane's CPU, whose output is kept in memory and
handed back with the reason it does not count (or None); the caller writes it to the run. A lane runs
one client at a time (`current`), so that an interrupt can kill it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import lean
from ..abparse import AbParseError, parse
from .process import taskset_prefix

#: A read that waits longer than this ends the block (ab's -s, the lean client's --timeout-ms).
SOCKET_TIMEOUT_S = 10
HOST = "127.0.0.1"


def timeout_s(requests: int) -> float:
    return 60 + requests / 1000  # 1 ms a request: ~20x the expected round trip


@dataclass
class Output:
    """A client's output (the lean client's JSON object, or ab's text), why it does not count, what it said
    on stderr."""
    data: dict | str | None
    problem: str | None
    stderr: str | None = None


@dataclass
class Clients:
    cpu: int | None
    #: The request bytes the lean client sends, per HTTP version ("1.0" are ab's own bytes).
    request_files: dict[str, Path]
    current: subprocess.Popen | None = None

    def lean(self, port: int, http: str, requests: int, warmup: int, response_bytes: int | None) -> Output:
        """One connection: `warmup` unmeasured requests, then `requests` timed ones."""
        cmd = lean.command(HOST, port, self.request_files[http], requests, SOCKET_TIMEOUT_S * 1000, warmup=warmup)
        return self._lean(cmd, requests + warmup, f"{requests:,}", lean.parse,
                          lambda run: run.problems(requests=requests, response_bytes=response_bytes))

    def interleaved(self, base_port: int, server_port: int, http: str, requests: int, run: int, segment: int,
                    warmup: int, response_bytes: dict[str, int | None]) -> Output:
        """Two connections, baseline and server, `requests` timed requests to each in runs of `run`."""
        cmd = lean.pair_command(HOST, base_port, server_port, self.request_files[http], requests, run, segment,
                                SOCKET_TIMEOUT_S * 1000, warmup=warmup)
        return self._lean(cmd, 2 * (requests + warmup), f"2 x {requests:,}", lean.parse_pair,
                          lambda result: result.problems(requests=requests, response_bytes=response_bytes))

    def _lean(self, cmd: list[str], total: int, what: str, parse, problems) -> Output:
        """Runs the lean client; its output, and why it does not count: a timeout, an unreadable output, what the
        parsed output says (`problems`), or a failure it did not explain."""
        code, out, err = self._run(cmd, total)
        if code is None:
            return Output(None, f"the lean client did not finish {what} requests within {timeout_s(total):.0f} s", err)
        try:
            found = problems(parse(out))
        except lean.LeanParseError as e:
            return Output(None, f"lean client exited with status {code}: {err or e}", err)
        if code != 0 and not found:
            found.append(f"lean client exited with status {code}: {err or 'no message'}")
        return Output(_json(out), "; ".join(found) or None, err)

    def ab(self, port: int, requests: int, response_bytes: int | None, body_bytes: int) -> Output:
        """One `ab -k -c1 -n requests` block (HTTP/1.0, ab's own request)."""
        cmd = ["ab", "-k", "-c1", "-n", str(requests), "-s", str(SOCKET_TIMEOUT_S), f"http://{HOST}:{port}/"]
        code, out, err = self._run(cmd, requests)
        if code is None:
            return Output(out or None, f"ab did not finish {requests:,} requests within {timeout_s(requests):.0f} s",
                          err)
        if code != 0:
            return Output(out or None, f"ab exited with status {code}: {err or 'no message'}", err)
        try:
            run = parse(out, "ab output")
        except AbParseError as e:
            return Output(out, str(e), err)
        return Output(out, "; ".join(run.problems(requests=requests, response_bytes=response_bytes,
                                                  body_bytes=body_bytes)) or None, err)

    def _run(self, cmd: list[str], requests: int) -> tuple[int | None, str, str | None]:
        """Runs a client on the lane's CPU: (exit status, or None on a timeout; stdout; what it said on stderr
        besides ab's progress lines, or None)."""
        self.current = subprocess.Popen(taskset_prefix(self.cpu) + cmd, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                        start_new_session=True)
        try:
            out, err = self.current.communicate(timeout=timeout_s(requests))
            code: int | None = self.current.returncode
        except subprocess.TimeoutExpired:
            kill(self.current)
            code, out, err = None, "", ""
        finally:
            self.current = None
        said = [x for x in err.splitlines() if x.strip() and not x.startswith(("Completed ", "Finished "))]
        return code, out, " / ".join(said) or None

    def stop(self) -> None:
        current = self.current
        if current is not None:
            kill(current)


def _json(text: str) -> dict:
    import json
    return json.loads(text)


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
