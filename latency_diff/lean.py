"""The lean client (native/lean.c): its command line and a strict reader of its JSON output.

The lean client sends ab's exact request bytes over one keep-alive connection, one request in
flight, and times each request with the monotonic clock into a histogram, so a run gives the
round-trip distribution that ab's whole-millisecond tables cannot. Its output is one JSON object
(format latency-diff/lean/1); any field missing or of the wrong type is an error naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .histogram import Histogram, HistogramError
from .servers import NATIVE_BUILD

FORMAT = "latency-diff/lean/1"
EXECUTABLE = NATIVE_BUILD / "lean"
_INT_FIELDS = ("requests", "warmup", "completed", "non_2xx", "length_mismatch", "request_bytes", "response_bytes",
               "elapsed_ns", "sum_ns", "min_ns", "max_ns", "clamped")


class LeanParseError(Exception):
    """Output that is not a complete lean-client result: the message names the file and field."""


@dataclass(frozen=True)
class LeanRun:
    path: str
    requests: int
    completed: int
    non_2xx: int
    length_mismatch: int
    request_bytes: int
    response_bytes: int
    elapsed_ns: int
    sum_ns: int
    min_ns: int
    max_ns: int
    clamped: int
    error: str | None
    histogram: Histogram

    @property
    def rtt_ns(self) -> float:
        """Time per request as ab defines it (elapsed time over requests), for a like-for-like comparison."""
        return self.elapsed_ns / self.completed

    @property
    def mean_rtt_ns(self) -> float:
        """Mean of the timed round trips alone (without the client's loop between requests)."""
        return self.sum_ns / self.completed

    @property
    def rps(self) -> float:
        return self.completed * 1e9 / self.elapsed_ns

    def problems(self, *, requests: int | None = None, response_bytes: int | None = None) -> list[str]:
        """Why this run does not count (empty if it does)."""
        p = []
        if self.error:
            p.append(f"lean client: {self.error}")
        if requests is not None and self.completed != requests:
            p.append(f"lean client completed {self.completed} of {requests} requests")
        if self.non_2xx:
            p.append(f"{self.non_2xx} non-2xx responses")
        if self.length_mismatch:
            p.append(f"{self.length_mismatch} responses of another length than the first: the response length changed")
        if response_bytes is not None and self.completed and self.response_bytes != response_bytes:
            p.append(f"responses of {self.response_bytes} bytes, expected {response_bytes}")
        if self.clamped:
            p.append(f"{self.clamped} round trips beyond the histogram's range")
        return p


def command(host: str, port: int, request_file: Path, requests: int, timeout_ms: int, warmup: int = 0) -> list[str]:
    return [str(EXECUTABLE), "--host", host, "--port", str(port), "--request", str(request_file),
            "--requests", str(requests), "--warmup", str(warmup), "--timeout-ms", str(timeout_ms)]


def parse(text: str, path: str = "<lean output>") -> LeanRun:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise LeanParseError(f"{path}: not valid JSON ({e}): truncated, or not lean-client output") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LeanParseError(f"{path}: field 'format' is not {FORMAT!r}: not lean-client output")
    for key in _INT_FIELDS:
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LeanParseError(f"{path}: field '{key}' is missing or not a non-negative integer")
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        raise LeanParseError(f"{path}: field 'error' must be null or a string")
    hist = data.get("histogram")
    if not isinstance(hist, dict) or not isinstance(hist.get("buckets"), list):
        raise LeanParseError(f"{path}: field 'histogram.buckets' is missing")
    try:
        histogram = Histogram.from_buckets(hist["buckets"], data["max_ns"] if data["completed"] else None)
    except HistogramError as e:
        raise LeanParseError(f"{path}: field 'histogram': {e}") from e
    if histogram.count != data["completed"]:
        raise LeanParseError(f"{path}: the histogram holds {histogram.count} values, 'completed' says "
                             f"{data['completed']}")
    if data["completed"] and data["elapsed_ns"] == 0:
        raise LeanParseError(f"{path}: 'elapsed_ns' is 0 for {data['completed']} requests")
    return LeanRun(path=path, requests=data["requests"], completed=data["completed"], non_2xx=data["non_2xx"],
                   length_mismatch=data["length_mismatch"], request_bytes=data["request_bytes"],
                   response_bytes=data["response_bytes"], elapsed_ns=data["elapsed_ns"], sum_ns=data["sum_ns"],
                   min_ns=data["min_ns"], max_ns=data["max_ns"], clamped=data["clamped"], error=error,
                   histogram=histogram)


def parse_file(path: Path) -> LeanRun:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise LeanParseError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise LeanParseError(f"{path}: not text: not lean-client output") from e
    return parse(text, str(path))
