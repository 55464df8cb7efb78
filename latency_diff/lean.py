"""The lean client (native/lean.c): its command lines and a strict reader of its JSON output.

The lean client sends ab's exact request bytes over a keep-alive connection, one request in flight,
and times each request with the monotonic clock into a histogram, so a run gives the round-trip
distribution that ab's whole-millisecond tables cannot. Two modes, two output formats:
- one connection (latency-diff/lean/1): warm-ups and single blocks, one histogram;
- interleaved (latency-diff/lean-pair/1): two connections, the baseline (side "a") and the server
  (side "b"), alternated in runs of R requests in ABBA order, one histogram per side and segment.
Any field missing or of the wrong type is an error naming the file (or block) and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .histogram import Histogram, HistogramError
from .servers import NATIVE_BUILD

FORMAT = "latency-diff/lean/1"
PAIR_FORMAT = "latency-diff/lean-pair/1"
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


def _load(text: str, path: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise LeanParseError(f"{path}: not valid JSON ({e}): truncated, or not lean-client output") from e
    if not isinstance(data, dict):
        raise LeanParseError(f"{path}: not a JSON object: not lean-client output")
    return data


def _ints(data: dict, keys: tuple[str, ...], path: str) -> None:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LeanParseError(f"{path}: field '{key}' is missing or not a non-negative integer")


def parse(text: str | dict, path: str = "<lean output>") -> LeanRun:
    """One single-connection run, from its JSON text or the object already decoded."""
    data = _load(text, path) if isinstance(text, str) else text
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LeanParseError(f"{path}: field 'format' is not {FORMAT!r}: not lean-client output")
    _ints(data, _INT_FIELDS, path)
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


# -- interleaved mode ---------------------------------------------------------------------------------
#: The interleaved client's sides: "a" is the first connection (the baseline), "b" the second (the server).
SIDES = {"a": "base", "b": "server"}
_SIDE_FIELDS = ("port", "completed", "non_2xx", "length_mismatch", "response_bytes")
_SEGMENT_FIELDS = ("count", "sum_ns", "min_ns", "max_ns", "clamped")


@dataclass(frozen=True)
class Side:
    """What one connection of an interleaved run saw."""
    port: int
    completed: int
    non_2xx: int
    length_mismatch: int
    response_bytes: int


@dataclass(frozen=True)
class SegmentSide:
    """One side's round trips in one segment."""
    count: int
    sum_ns: int
    clamped: int
    histogram: Histogram

    @property
    def mean_ns(self) -> float:
        return self.sum_ns / self.count


@dataclass(frozen=True)
class LeanPairRun:
    path: str
    requests: int
    warmup: int
    run: int
    segment: int
    elapsed_ns: int
    error: str | None
    #: "base" and "server" (the client's sides a and b).
    sides: dict[str, Side]
    #: Every finished segment: {"base": SegmentSide, "server": SegmentSide}.
    segments: list[dict[str, SegmentSide]]

    def problems(self, *, requests: int | None = None, response_bytes: dict[str, int | None] | None = None
                 ) -> list[str]:
        """Why this run does not count (empty if it does), naming the process: baseline or server."""
        p = []
        if self.error:
            p.append(f"lean client: {self.error}")
        for who, side in self.sides.items():
            name = "the baseline" if who == "base" else "the server"
            if requests is not None and side.completed != requests:
                p.append(f"lean client completed {side.completed} of {requests} requests to {name}")
            if side.non_2xx:
                p.append(f"{side.non_2xx} non-2xx responses from {name}")
            if side.length_mismatch:
                p.append(f"{side.length_mismatch} responses from {name} of another length than the first: the "
                         "response length changed")
            want = (response_bytes or {}).get(who)
            if want is not None and side.completed and side.response_bytes != want:
                p.append(f"responses of {side.response_bytes} bytes from {name}, expected {want}")
        clamped = sum(g[w].clamped for g in self.segments for w in g)
        if clamped:
            p.append(f"{clamped} round trips beyond the histogram's range")
        return p


def parse_pair(text: str | dict, path: str = "<lean-pair output>") -> LeanPairRun:
    """One interleaved run, from its JSON text or the object already decoded."""
    data = _load(text, path) if isinstance(text, str) else text
    if not isinstance(data, dict) or data.get("format") != PAIR_FORMAT:
        raise LeanParseError(f"{path}: field 'format' is not {PAIR_FORMAT!r}: not interleaved lean-client output")
    _ints(data, ("requests", "warmup", "run", "segment", "elapsed_ns"), path)
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        raise LeanParseError(f"{path}: field 'error' must be null or a string")
    sides = {}
    for key, who in SIDES.items():
        side = data.get(key)
        if not isinstance(side, dict):
            raise LeanParseError(f"{path}: field '{key}' is missing")
        _ints(side, _SIDE_FIELDS, f"{path}: side {key}")
        sides[who] = Side(**{k: side[k] for k in _SIDE_FIELDS})
    raw = data.get("segments")
    if not isinstance(raw, list):
        raise LeanParseError(f"{path}: field 'segments' is missing")
    segments = []
    for i, seg in enumerate(raw, 1):
        if not isinstance(seg, dict):
            raise LeanParseError(f"{path}: segment {i} is not an object")
        parts = {}
        for key, who in SIDES.items():
            where = f"{path}: segment {i} side {key}"
            side = seg.get(key)
            if not isinstance(side, dict) or not isinstance(side.get("buckets"), list):
                raise LeanParseError(f"{where}: missing, or without buckets")
            _ints(side, _SEGMENT_FIELDS, where)
            if side["count"] != data["segment"]:
                raise LeanParseError(f"{where}: {side['count']} round trips, the segment is {data['segment']}")
            try:
                h = Histogram.from_buckets(side["buckets"], side["max_ns"])
            except HistogramError as e:
                raise LeanParseError(f"{where}: {e}") from e
            if h.count != side["count"]:
                raise LeanParseError(f"{where}: the histogram holds {h.count} values, 'count' says {side['count']}")
            parts[who] = SegmentSide(side["count"], side["sum_ns"], side["clamped"], h)
        segments.append(parts)
    finished = len(segments) * data["segment"]
    if any(s.completed < finished for s in sides.values()):
        raise LeanParseError(f"{path}: {len(segments)} segments of {data['segment']} but only "
                             f"{min(s.completed for s in sides.values())} requests completed on a side")
    return LeanPairRun(path=path, requests=data["requests"], warmup=data["warmup"], run=data["run"],
                       segment=data["segment"], elapsed_ns=data["elapsed_ns"], error=error, sides=sides,
                       segments=segments)


def pair_command(host: str, base_port: int, server_port: int, request_file: Path, requests: int, run: int,
                 segment: int, timeout_ms: int, warmup: int = 0) -> list[str]:
    """The interleaved client: `requests` timed requests to each of the two ports, in runs of `run`."""
    return [str(EXECUTABLE), "--host", host, "--port", str(base_port), "--interleave", str(server_port),
            "--request", str(request_file), "--requests", str(requests), "--run", str(run), "--segment",
            str(segment), "--warmup", str(warmup), "--timeout-ms", str(timeout_ms)]
