"""The two clients, one block at a time: the lean C client and `ab -k -c1`.

A block is one client process over one fresh keep-alive connection, pinned like the servers. It
writes its raw output to a file of the run; the caller gets back why the block does not count, or
None. Only one client runs at a time (`current`), so an interrupt can kill it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import lean
from .abparse import AbParseError, parse_file
from .process import taskset_prefix

#: A read that waits longer than this ends the block (ab's -s, the lean client's --timeout-ms).
SOCKET_TIMEOUT_S = 10
HOST = "127.0.0.1"


def block_timeout_s(requests: int) -> float:
    return 60 + requests / 1000  # 1 ms a request: ~20x the expected round trip


@dataclass
class Clients:
    cpu: int | None
    #: The request bytes the lean client sends, per HTTP version ("1.0" are ab's own bytes).
    request_files: dict[str, Path]
    current: subprocess.Popen | None = None

    def lean(self, port: int, http: str, requests: int, warmup: int, out_path: Path,
             response_bytes: int | None) -> str | None:
        """One lean-client block: `warmup` unmeasured requests, then `requests` timed ones."""
        cmd = taskset_prefix(self.cpu) + lean.command(HOST, port, self.request_files[http], requests,
                                                      SOCKET_TIMEOUT_S * 1000, warmup=warmup)
        code, err = self._run(cmd, out_path, requests)
        if code is None:
            return f"the lean client did not finish {requests:,} requests within {block_timeout_s(requests):.0f} s"
        try:
            run = lean.parse_file(out_path)
        except lean.LeanParseError as e:
            return f"lean client exited with status {code}: {err.strip() or e}"
        problems = run.problems(requests=requests, response_bytes=response_bytes)
        if code != 0 and not problems:
            problems.append(f"lean client exited with status {code}: {err.strip() or 'no message'}")
        return "; ".join(problems) or None

    def ab(self, port: int, requests: int, out_path: Path, response_bytes: int | None) -> str | None:
        """One `ab -k -c1 -n requests` block (HTTP/1.0, ab's own request)."""
        cmd = taskset_prefix(self.cpu) + ["ab", "-k", "-c1", "-n", str(requests), "-s", str(SOCKET_TIMEOUT_S),
                                          f"http://{HOST}:{port}/"]
        code, err = self._run(cmd, out_path, requests)
        if code is None:
            return f"ab did not finish {requests:,} requests within {block_timeout_s(requests):.0f} s"
        if code != 0:
            lines = [x for x in err.splitlines() if x.strip() and not x.startswith(("Completed ", "Finished "))]
            return f"ab exited with status {code}: {' / '.join(lines[-3:]) or 'no message'}"
        try:
            run = parse_file(out_path)
        except AbParseError as e:
            return str(e)
        return "; ".join(run.problems(requests=requests, response_bytes=response_bytes)) or None

    def _run(self, cmd: list[str], out_path: Path, requests: int) -> tuple[int | None, str]:
        """Runs a client with stdout to out_path; (exit status or None on a timeout, its stderr).
        Its stderr is kept next to the output when it said anything but ab's progress lines."""
        with out_path.open("w", encoding="utf-8") as out:
            self.current = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                            text=True, start_new_session=True)
            try:
                _, err = self.current.communicate(timeout=block_timeout_s(requests))
                code: int | None = self.current.returncode
            except subprocess.TimeoutExpired:
                kill(self.current)
                code, err = None, ""
            finally:
                self.current = None
        said = [x for x in err.splitlines() if x.strip() and not x.startswith(("Completed ", "Finished "))]
        if said:
            out_path.with_suffix(".stderr.txt").write_text("\n".join(said) + "\n", encoding="utf-8")
        return code, err

    def stop(self) -> None:
        if self.current is not None:
            kill(self.current)


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
