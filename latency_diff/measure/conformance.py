"""The conformance checker: is this server's answer to ab's request the reference response?

It sends the exact bytes that `ab -k` sends (HTTP/1.0, Connection: Keep-Alive) over one
connection, one request at a time, or in HTTP/1.1 mode the same request as HTTP/1.1 (a Host
header, persistent by default, no Connection header: what the lean client sends to servers that
cannot keep ab's HTTP/1.0 connection alive). Either way it checks: status 200; exactly the
reference's header names; its constant header values; body HelloWorld; Connection: keep-alive
and the connection kept open; the same length every time and within 8 bytes of the dummy's; a
valid Date near the local clock that changes from one second to the next; and nothing sent
beyond each response. In HTTP/1.1 mode `Connection: keep-alive` may be left out, since HTTP/1.1
connections are persistent by default and most libraries send the header only to HTTP/1.0
clients; a response without it is compared with the dummy's length as if it had those 24 bytes,
so that the 8-byte rule still holds for everything else. The test suite and the driver both use
the checker: a server that drifts from the reference is caught, reported and left out of the
table, never measured.

Usage: python3 -m latency_diff.measure.conformance [--http 1.0|1.1] SERVER [SERVER ...]
           (starts each, checks, stops)
       python3 -m latency_diff.measure.conformance --port P [--name NAME] [--http 1.1]
           (checks a server already running)
"""

from __future__ import annotations

import argparse
import email.utils
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..servers import REFERENCE_RESPONSE as REFERENCE_FILE

#: How far a server's response length may be from the dummy's: its headers may differ by a few bytes (a Server
#: name of another length, a charset written otherwise), not by a header more or less.
LENGTH_TOLERANCE = 8
#: Headers whose value the checker compares with the reference (the others are live or per server).
LIVE_HEADERS = {"date", "server"}
SOCKET_TIMEOUT_S = 5.0
#: HTTP/1.1 mode: a response may leave this header out (persistence is the default there)...
HTTP11_OPTIONAL = "connection"
#: ...and is then compared with the dummy's length as if it had it.
CONNECTION_LINE_BYTES = len(b"Connection: keep-alive\r\n")
#: How far behind the clock a cached Date may lag and still count as live: a cache refreshed once a second
#: on a timer of its own phase (Pekko HTTP's) lags by up to a second plus its scheduler's tick.
DATE_CACHE_LAG_S = 1.1


def ab_request(host: str, port: int) -> bytes:
    """The exact request bytes of `ab -k` 2.3 (captured from ab itself)."""
    return (f"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: {host}:{port}\r\n"
            "User-Agent: ApacheBench/2.3\r\nAccept: */*\r\n\r\n").encode("ascii")


def request_bytes(http: str, host: str, port: int) -> bytes:
    """The request of each HTTP mode: "1.0" is ab's own; "1.1" the same as HTTP/1.1, without Connection."""
    if http == "1.0":
        return ab_request(host, port)
    if http == "1.1":
        return (f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: ApacheBench/2.3\r\n"
                "Accept: */*\r\n\r\n").encode("ascii")
    raise ValueError(f"HTTP version {http!r}: expected '1.0' or '1.1'")


@dataclass(frozen=True)
class Reference:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def names(self) -> list[str]:
        return [n.lower() for n, _ in self.headers]

    def value(self, name: str) -> str:
        return next(v for n, v in self.headers if n.lower() == name.lower())


def load_reference(path: Path = REFERENCE_FILE) -> Reference:
    """Reads the one definition of the reference response (shared with the Java servers)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    status = int(lines[0].split(" ")[1])
    blank = lines.index("")
    headers = [tuple(line.split(": ", 1)) for line in lines[1:blank]]
    body = "\n".join(lines[blank + 1:]).rstrip().encode("utf-8")
    return Reference(status, headers, body)  # type: ignore[arg-type]


@dataclass
class Response:
    raw: bytes
    status_line: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def status(self) -> int:
        parts = self.status_line.split(" ")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else -1

    def get(self, name: str) -> list[str]:
        return [v for n, v in self.headers if n.lower() == name.lower()]


class ProtocolError(Exception):
    pass


class _Reader:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ProtocolError("the server closed the connection")
        self.buf += chunk

    def response(self) -> Response:
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > 65536:
                raise ProtocolError("no end of headers in the first 64 KiB")
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = []
        for line in lines[1:]:
            if ":" not in line:
                raise ProtocolError(f"malformed header line {line!r}")
            name, value = line.split(":", 1)
            headers.append((name.strip(), value.strip()))
        lengths = [v for n, v in headers if n.lower() == "content-length"]
        if len(lengths) != 1 or not lengths[0].isdigit():
            raise ProtocolError(f"needs exactly one numeric Content-Length, got {lengths}")
        n = int(lengths[0])
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return Response(head + b"\r\n\r\n" + body, lines[0], headers, body)


@dataclass
class Result:
    ok: bool
    problems: list[str] = field(default_factory=list)
    response_bytes: int | None = None
    raw: bytes = b""
    #: The first response's Date and the clock (time.time()) when it arrived, for check_date_later.
    date: str | None = None
    received_at: float | None = None
    #: The HTTP version of the requests it sent.
    http: str = "1.0"

    def summary(self) -> str:
        return "conformant" if self.ok else "; ".join(self.problems)


def _check_one(r: Response, ref: Reference, name: str | None, http: str = "1.0") -> list[str]:
    problems = []
    if not r.status_line.startswith("HTTP/1."):
        problems.append(f"status line {r.status_line!r} is not HTTP/1.x")
    if r.status != ref.status:
        problems.append(f"status {r.status}, expected {ref.status}")
    got = [n.lower() for n, _ in r.headers]
    missing = [n for n in ref.names if n not in got and not (http == "1.1" and n == HTTP11_OPTIONAL)]
    extra = [n for n in got if n not in ref.names]
    dupes = sorted({n for n in got if got.count(n) > 1})
    if missing:
        problems.append(f"missing header(s): {', '.join(missing)}")
    if extra:
        problems.append(f"header(s) not in the reference: {', '.join(extra)}")
    if dupes:
        problems.append(f"header(s) sent twice: {', '.join(dupes)}")
    for n, v in ref.headers:
        if n.lower() in LIVE_HEADERS or n.lower() in missing or n.lower() not in got:
            continue
        values = r.get(n)
        if values and values[0].lower() != v.lower():
            problems.append(f"{n}: {values[0]!r}, expected {v!r}")
    if name is not None and r.get("Server") and r.get("Server")[0] != name:
        value = r.get("Server")[0]
        # "JLHTTP/3.2" for "jlhttp" is the library's own header, not another server that holds the port.
        hint = "the library writes its own" if value.lower().startswith(name.lower()) else "another server on the port?"
        problems.append(f"Server: {value!r}, expected {name!r} ({hint})")
    if r.body != ref.body:
        problems.append(f"body {r.body[:40]!r}, expected {ref.body!r}")
    for date in r.get("Date")[:1]:
        parsed = email.utils.parsedate_to_datetime(date) if _is_imf_fixdate(date) else None
        if parsed is None:
            problems.append(f"Date {date!r} is not an IMF-fixdate")
        elif abs(parsed.timestamp() - time.time()) > 5:
            problems.append(f"Date {date!r} is not within 5 s of this machine's clock")
    return problems


def _is_imf_fixdate(value: str) -> bool:
    # e.g. "Mon, 28 Jul 2014 05:27:28 GMT": 29 characters, two-digit day, GMT.
    return len(value) == 29 and value.endswith(" GMT") and value[3:5] == ", "


def check(port: int, host: str = "127.0.0.1", *, name: str | None = None, reference_length: int | None = None,
          requests: int = 5, check_date_change: bool = True, http: str = "1.0") -> Result:
    """Checks the server on host:port with HTTP/1.0 (ab's request) or HTTP/1.1. Never raises for a misbehaving
    server: problems are in the result."""
    ref = load_reference()
    request = request_bytes(http, host, port)
    problems: list[str] = []
    responses: list[Response] = []
    received_at = None
    try:
        with socket.create_connection((host, port), timeout=SOCKET_TIMEOUT_S) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = _Reader(sock)
            for i in range(requests):
                try:
                    sock.sendall(request)
                    responses.append(reader.response())
                    received_at = received_at or time.time()
                except (ProtocolError, ConnectionError) as e:
                    closed = isinstance(e, ConnectionError) or "closed" in str(e)
                    what = "keep-alive not honoured: " if i > 0 and closed else ""
                    problems.append(f"response {i + 1}: {what}{e}")
                    break
            if len(responses) == requests and check_date_change:
                first = responses[0].get("Date")
                time.sleep(_date_wait(time.time()))
                sock.sendall(request)
                try:
                    later = reader.response()
                    responses.append(later)
                    if first and later.get("Date") == first:
                        problems.append(f"Date did not change after more than a second ({first[0]!r}): not live")
                except (ProtocolError, ConnectionError) as e:
                    problems.append(f"after a pause of a second: {e}")
            if responses and not problems:
                sock.settimeout(0.2)
                try:
                    extra = reader.buf or sock.recv(4096)
                    if extra:
                        problems.append(f"{len(extra)} unexpected byte(s) after the response: {extra[:40]!r}")
                except TimeoutError:
                    pass
    except OSError as e:
        problems.append(f"cannot talk to {host}:{port}: {e}")
    for r in responses:
        for p in _check_one(r, ref, name, http):
            if p not in problems:  # one fault repeated on every response is reported once
                problems.append(p)
    lengths = sorted({len(r.raw) for r in responses})
    if len(lengths) > 1:
        problems.append(f"response length changed between requests: {lengths}")
    length = lengths[0] if lengths else None
    # HTTP/1.1 without Connection: keep-alive counts as if it had it (the dummy always sends it).
    without = http == "1.1" and bool(responses) and not responses[0].get("Connection")
    compared = None if length is None else length + (CONNECTION_LINE_BYTES if without else 0)
    if compared is not None and reference_length is not None and abs(compared - reference_length) > LENGTH_TOLERANCE:
        problems.append(f"response is {length} bytes" + (f" ({compared} with Connection: keep-alive)" if without
                                                          else "") + f", the dummy's {reference_length}: more than "
                        f"{LENGTH_TOLERANCE} bytes apart")
    dates = responses[0].get("Date") if responses else []
    return Result(ok=not problems, problems=problems, response_bytes=length,
                  raw=responses[0].raw if responses else b"", date=dates[0] if dates else None,
                  received_at=received_at, http=http)


def _date_wait(since: float, now: float | None = None) -> float:
    """Seconds to wait after a response received at `since` until a live Date must have changed.

    A Date that may be cached but is refreshed at least once a second can lag the clock by up to a second
    (one library refreshes it every 750 ms, Pekko HTTP every second from its first request on): the answer
    is DATE_CACHE_LAG_S past the next second boundary after `since`, so that any such cache has been
    refreshed after that boundary; 0 if that moment has passed.
    """
    now = time.time() if now is None else now
    return max(0.0, since - since % 1.0 + 1.0 + DATE_CACHE_LAG_S - now)


def check_date_later(port: int, first: Result, host: str = "127.0.0.1") -> str | None:
    """The live-Date check, deferred: one more request (on a new connection) once more than a second has
    passed since `first` (a passing check() without the date change). The driver makes it after the
    measured runs, which usually last longer than that, so it costs no waiting. Returns the problem or None.
    """
    if first.date is None or first.received_at is None:
        return "no Date in the first check to compare with"
    time.sleep(_date_wait(first.received_at))
    try:
        with socket.create_connection((host, port), timeout=SOCKET_TIMEOUT_S) as sock:
            sock.sendall(request_bytes(first.http, host, port))
            later = _Reader(sock).response()
    except (OSError, ProtocolError) as e:
        return f"the request after a second failed: {e}"
    value = later.get("Date")
    if not value:
        return "no Date header in the response after a second"
    if value[0] == first.date:
        return f"Date did not change after more than a second ({first.date!r}): not live"
    return None


def check_servers(names: list[str], *, verbose: bool = True, http: str | None = None) -> dict[str, Result]:
    """Starts the dummy (for its length) and each named server (none named: every one, matrix_only ones too) on a
    free port; checks each with `http`, or with its own HTTP version (server.toml) when None; stops."""
    from ..catalog import select
    from ..servers import discover
    from .process import ServerProcess
    servers = select(discover(), ",".join(names)) if names else discover()
    results: dict[str, Result] = {}
    reference_length: int | None = None
    with tempfile.TemporaryDirectory(prefix="latency-diff-conformance-") as tmp:
        for server in servers:
            with ServerProcess(server, 0, Path(tmp) / f"{server.name}.log") as proc:
                port = proc.start()
                result = check(port, name=server.expected_server_header, reference_length=reference_length,
                               http=http or server.http)
            if server.baseline:
                reference_length = result.response_bytes
            results[server.name] = result
            if verbose:
                print(f"{server.name:14} HTTP/{result.http} {result.response_bytes or '-':>5} bytes  "
                      f"{result.summary()}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("servers", nargs="*", help="servers to start and check (default: every one, matrix_only ones "
                        "too); the dummy always")
    parser.add_argument("--port", type=int, help="check a server already listening on this port instead")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--name", help="the expected Server header (with --port)")
    parser.add_argument("--reference-length", type=int, help="the dummy's response length (with --port)")
    parser.add_argument("--http", choices=("1.0", "1.1"), help="HTTP version of the requests (default: each "
                        "server's own, from its server.toml; 1.0 with --port)")
    args = parser.parse_args(argv)
    if args.port is not None:
        result = check(args.port, args.host, name=args.name, reference_length=args.reference_length,
                       http=args.http or "1.0")
        print(f"{result.response_bytes or '-'} bytes: {result.summary()}")
        if result.raw:
            print(result.raw.decode("latin-1"))
        return 0 if result.ok else 1
    from .process import StartError
    try:
        results = check_servers(args.servers, http=args.http)
    except StartError as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 1
    return 0 if all(r.ok for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
