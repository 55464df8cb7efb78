"""Strict parser of ApacheBench 2.3 output (one file = one `ab -k -c1` run).

Every field the analysis needs must be present and well-formed, or AbParseError names the file and
the field. The round trip comes from complete requests and total time, never from ab's
whole-millisecond tables: "Time per request" has a resolution of 1 us, and the tables, of 1 ms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


class AbParseError(Exception):
    """Output that is not a complete ab run: the message names the file and what is wrong."""


@dataclass(frozen=True)
class AbRun:
    path: str
    server_software: str
    document_length: int
    concurrency: int
    time_taken_s: float
    complete: int
    failed: int
    failed_connect: int
    failed_receive: int
    failed_length: int
    failed_exceptions: int
    non_2xx: int
    keep_alive: int
    total_transferred: int
    html_transferred: int
    rps_reported: float

    @property
    def rtt_ns(self) -> float:
        """Mean round trip: total time over complete requests (the single connection is half-duplex)."""
        return self.time_taken_s * 1e9 / self.complete

    @property
    def rps(self) -> float:
        return self.complete / self.time_taken_s

    @property
    def block_rtt_ns(self) -> float:
        """Mean round trip from ab's 'Requests per second' line: ab prints it from its microsecond-resolution
        elapsed time, while 'Time taken for tests' is rounded to the millisecond (too coarse for a short block)."""
        return 1e9 / self.rps_reported

    @property
    def bytes_per_response(self) -> float:
        return self.total_transferred / self.complete

    def problems(self, *, requests: int | None = None, response_bytes: int | None = None,
                 body_bytes: int | None = None) -> list[str]:
        """Why this run does not count (empty if it does). Each problem makes the run invalid."""
        p = []
        if requests is not None and self.complete != requests:
            p.append(f"ab completed {self.complete} of {requests} requests")
        if self.failed:
            p.append(f"{self.failed} failed requests (connect {self.failed_connect}, receive "
                     f"{self.failed_receive}, length {self.failed_length}, exceptions {self.failed_exceptions})")
        if self.non_2xx:
            p.append(f"{self.non_2xx} non-2xx responses")
        if self.keep_alive != self.complete:
            p.append(f"only {self.keep_alive} of {self.complete} requests were kept alive")
        if self.concurrency != 1:
            p.append(f"concurrency {self.concurrency}, not 1")
        if body_bytes is not None and self.document_length != body_bytes:
            p.append(f"document length {self.document_length}, expected {body_bytes}")
        if response_bytes is not None and self.total_transferred != self.complete * response_bytes:
            p.append(f"{self.total_transferred} bytes transferred, expected {self.complete} x {response_bytes}: "
                     "the response length changed")
        return p


_FIELDS: dict[str, tuple[str, str]] = {
    # key: (label as ab prints it, value pattern)
    "server_software": ("Server Software", r"(.*)"),
    "document_length": ("Document Length", r"(\d+) bytes"),
    "concurrency": ("Concurrency Level", r"(\d+)"),
    "time_taken_s": ("Time taken for tests", r"(\d+\.\d+) seconds"),
    "complete": ("Complete requests", r"(\d+)"),
    "failed": ("Failed requests", r"(\d+)"),
    "keep_alive": ("Keep-Alive requests", r"(\d+)"),
    "total_transferred": ("Total transferred", r"(\d+) bytes"),
    "html_transferred": ("HTML transferred", r"(\d+) bytes"),
    "rps_reported": ("Requests per second", r"(\d+\.\d+) \[#/sec\] \(mean\)"),
}
_OPTIONAL = {"non_2xx": ("Non-2xx responses", r"(\d+)")}
_FAILED_DETAIL = re.compile(r"^\s+\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)\s*$")
_END_MARKER = re.compile(r"^\s*100%\s+\d+ \(longest request\)\s*$")


def parse(text: str, path: str = "<ab output>") -> AbRun:
    """Parses the text of one ab run. Raises AbParseError naming `path` and the problem."""
    if "\x00" in text:
        raise AbParseError(f"{path}: binary data, not ab output")
    if not text.strip():
        raise AbParseError(f"{path}: empty")
    lines = text.splitlines()
    if not any(line.startswith("This is ApacheBench, Version 2.") for line in lines):
        raise AbParseError(f"{path}: no 'This is ApacheBench, Version 2.x' banner: not ab output")
    values: dict[str, str] = {}
    failed_detail: tuple[int, int, int, int] | None = None
    by_label = {label: (key, pattern) for key, (label, pattern) in {**_FIELDS, **_OPTIONAL}.items()}
    for i, line in enumerate(lines):
        if ":" not in line or line.startswith(" "):
            continue
        label, rest = line.split(":", 1)
        if label not in by_label:
            continue
        key, pattern = by_label[label]
        if key in values:
            raise AbParseError(f"{path}: line {i + 1}: '{label}' appears twice")
        m = re.fullmatch(pattern, rest.strip())
        if not m:
            raise AbParseError(f"{path}: line {i + 1}: '{label}' has a malformed value {rest.strip()!r}")
        values[key] = m.group(1)
        if key == "failed" and int(m.group(1)) > 0:
            detail = _FAILED_DETAIL.match(lines[i + 1]) if i + 1 < len(lines) else None
            if not detail:
                raise AbParseError(f"{path}: line {i + 2}: the breakdown of failed requests is missing")
            failed_detail = tuple(int(g) for g in detail.groups())  # type: ignore[assignment]
    missing = [label for key, (label, _) in _FIELDS.items() if key not in values]
    if missing:
        raise AbParseError(f"{path}: missing field(s): {', '.join(missing)} (truncated, or ab failed mid-run)")
    if not any(_END_MARKER.match(line) for line in lines):
        raise AbParseError(f"{path}: no '100% ... (longest request)' line at the end: truncated")
    complete = int(values["complete"])
    time_taken = float(values["time_taken_s"])
    if complete <= 0:
        raise AbParseError(f"{path}: 'Complete requests' is {complete}: nothing was measured")
    if time_taken <= 0:
        raise AbParseError(f"{path}: 'Time taken for tests' is {time_taken}: too short to measure")
    fc, fr, fl, fe = failed_detail or (0, 0, 0, 0)
    return AbRun(
        path=path,
        server_software=values["server_software"],
        document_length=int(values["document_length"]),
        concurrency=int(values["concurrency"]),
        time_taken_s=time_taken,
        complete=complete,
        failed=int(values["failed"]),
        failed_connect=fc, failed_receive=fr, failed_length=fl, failed_exceptions=fe,
        non_2xx=int(values.get("non_2xx", "0")),
        keep_alive=int(values["keep_alive"]),
        total_transferred=int(values["total_transferred"]),
        html_transferred=int(values["html_transferred"]),
        rps_reported=float(values["rps_reported"]),
    )


def parse_file(path: Path) -> AbRun:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise AbParseError(f"{path}: cannot read: {e.strerror}") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AbParseError(f"{path}: not text (byte {e.start} is not UTF-8): not ab output") from e
    return parse(text, str(path))
