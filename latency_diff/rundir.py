"""The run directory, results/<run id>/: the one module that knows its files, writes them and reads them back.

A run is a few files (pyperf keeps a whole benchmark in one file; a run of thousands is a smell):

    run.json         format, status, settings, environment and server metadata, once
    pairs.jsonl      one PairRecord a line (records.py), appended as each pair ends
    blocks.jsonl.xz  one BlockRecord a line: every client output of every measured pair, verbatim
    logs.jsonl.xz    every server process's log and its conformance-checked response, and each profile's
                     stacks cut to what their groups need (profiling.reduce)
    profiles.jsonl.xz  each profile's full stacks and flame graph: large, and needed only for the flame
                     graphs, so a committed run may leave it out (.gitignore does)

and what the analysis derives from them (summary.json, summary.csv, report.md, report.html, PNG plots),
which can always be written again. The compression follows the suffix, as in pyperf. While the run
goes, blocks and logs are appended to .jsonl.gz files, a gzip member per line, each written whole, so
that a run stopped at any moment leaves every finished record readable; when the run ends they are
sealed into one xz stream each (about 6 times smaller: the records repeat each other). While a
process runs, its log is a file under .live/, packed into the logs when it stops.

Every append is fsynced (a pair writes a handful of records), so what the run reported as done is on
disk. Sealing is crash-safe: the .xz is written whole (through a temporary name, fsynced) before the
.gz is removed, so a crash between the two leaves the appended records twice, as the last records of
the .xz and in the .gz; reading notices exactly that case and reads them once (with a note), and
sealing again just removes the .gz. Any other record that appears twice is not dropped here: the
analysis makes its pair invalid (evaluate.read_pair).
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import KIT_ROOT
from .records import RUN_FORMAT, BlockRecord, PairRecord, RecordError

RUN = "run.json"
PAIRS = "pairs.jsonl"
BLOCKS = "blocks.jsonl.xz"
LOGS = "logs.jsonl.xz"
PROFILES = "profiles.jsonl.xz"
#: Where blocks, logs and profiles are appended while the run goes, before they are sealed.
APPENDING = {BLOCKS: "blocks.jsonl.gz", LOGS: "logs.jsonl.gz", PROFILES: "profiles.jsonl.gz"}
LIVE = ".live"
#: Formats the analysis reads, and those it names when refusing.
OLD_FORMATS = {"latency-diff/run/1": "the single-server design", "latency-diff/run/2": "the single-server design",
               "latency-diff/run/3": "the paired design's first layout (a file per block)"}


class RunDirError(Exception):
    """A run directory that cannot be read or written; the message names the file and what is wrong."""


def create(results_dir: Path) -> Path:
    """results/<UTC timestamp>, created exclusively: an earlier run is never overwritten."""
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunDirError(f"cannot create the results directory {results_dir}: {e.strerror}") from e
    if not os.access(results_dir, os.W_OK):
        raise RunDirError(f"the results directory {results_dir} is not writable")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for i in range(1, 100):
        d = results_dir / (stamp if i == 1 else f"{stamp}-{i}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise RunDirError(f"cannot find a free run directory name under {results_dir}")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Writes through a temporary name, fsyncs and renames: a reader never sees half a file, and after a crash the
    file is either the old one or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with tmp.open("wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def gzip_member(line: str) -> bytes:
    """One line as a whole gzip member (no time or name in its header: the same line gives the same bytes)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as z:
        z.write(line.encode("utf-8") + b"\n")
    return buf.getvalue()


#: A JDK's folder before its bin/java, and the driver's temporary folder (agents' sockets, request files).
_JAVA_HOME = re.compile(r"/[^\s:=\"'\[\]()]+(?=/bin/java\b)")
_TMP = re.compile(re.escape(tempfile.gettempdir().rstrip("/")) + r"/latency-diff-[^/\s]+")


def portable_text(text: str, root: Path = KIT_ROOT) -> str:
    """A log's text as a committed record may hold it, without the measuring machine's folders: paths in the kit
    relative to it, a JDK's folder as <JDK>, the driver's temporary folder as <tmp>."""
    text = text.replace(str(root).rstrip("/") + "/", "")
    return _TMP.sub("<tmp>", _JAVA_HOME.sub("<JDK>", text))


class Writer:
    """Appends a run's records as they happen; safe to call from the driver's two lanes at once."""

    def __init__(self, run_dir: Path):
        self.dir = run_dir
        self.live = run_dir / LIVE
        self.live.mkdir(exist_ok=True)
        self._lock = threading.Lock()

    def run(self, data: dict) -> None:
        with self._lock:
            write_atomic(self.dir / RUN, json.dumps({"format": RUN_FORMAT, **data}, indent=2) + "\n")

    def pair(self, record: PairRecord) -> None:
        self._append(PAIRS, (json.dumps(record.to_json()) + "\n").encode("utf-8"), sync=True)

    def block(self, record: BlockRecord) -> None:
        self._append(APPENDING[BLOCKS], gzip_member(json.dumps(record.to_json())), sync=True)

    def log(self, kind: str, tag: str, text: str) -> None:
        """kind: "log" (a process's output), "response" (its conformance-checked response, as latin-1 text),
        "progress" (the time-left estimate after a pair, JSON), "skipped" (a process prepared for a server that stopped
        meanwhile: how it ended and the wait it cost, JSON), or a window's "profile" or "flamegraph"."""
        self._append(APPENDING[LOGS], gzip_member(json.dumps({"kind": kind, "tag": tag, "text": portable_text(text)})),
                     sync=True)

    def profile(self, kind: str, tag: str, text: str) -> None:
        """kind: a profiling window's "stacks" (collapsed) or "flamegraph" (HTML), without the machine's paths."""
        self._append(APPENDING[PROFILES], gzip_member(json.dumps({"kind": kind, "tag": tag,
                                                                  "text": portable_text(text)})),
                     sync=True)

    def live_log(self, tag: str) -> Path:
        return self.live / f"{tag}.log"

    def pack_log(self, tag: str) -> None:
        """Moves a stopped process's live log into logs.jsonl.gz."""
        path = self.live_log(tag)
        if path.is_file():
            self.log("log", tag, path.read_text(encoding="utf-8", errors="replace"))
            path.unlink()

    def close(self) -> None:
        """Packs what is left under .live/ (a run that stopped early), removes the folder, and seals the blocks and
        the logs."""
        for path in sorted(self.live.glob("*.log")):
            self.pack_log(path.stem)
        try:
            self.live.rmdir()
        except OSError:
            pass
        with self._lock:
            for sealed, appending in APPENDING.items():
                seal(self.dir / appending, self.dir / sealed)

    def _append(self, name: str, data: bytes, *, sync: bool) -> None:
        with self._lock, (self.dir / name).open("ab") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())


def seal(appending: Path, sealed: Path) -> None:
    """Recompresses an appended .gz file into one .xz stream (its records appended to any already sealed), then
    removes it. If the .gz's records are already the last of the .xz (a crash after the .xz was written and before
    the .gz was removed), it only removes the .gz. A file with a record cut short is left as it is, unsealed, so that
    reading it still says so."""
    if not appending.is_file():
        return
    notes: list[str] = []
    new = [obj for _, obj in _json_lines(appending, notes)]
    old = [obj for _, obj in _json_lines(sealed, notes)]
    if notes:
        return
    if new and not _already_sealed(old, new):
        write_atomic(sealed, lzma.compress("".join(json.dumps(obj) + "\n" for obj in old + new).encode("utf-8"),
                                           preset=6))
        _sync_dir(sealed.parent)  # the new .xz is on disk before the .gz goes
    appending.unlink()


def _already_sealed(old: list[dict], new: list[dict]) -> bool:
    """Whether the appended records are exactly the last records of the sealed file (the state a crash while sealing
    leaves)."""
    return bool(new) and len(old) >= len(new) and old[len(old) - len(new):] == new


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class RunFiles:
    """What a run directory holds, read back and checked."""
    dir: Path
    run: dict
    pairs: list[PairRecord]
    #: (server, pair) -> its blocks, in the order they ran.
    blocks: dict[tuple[str, int], list[BlockRecord]] = field(default_factory=dict)
    #: Problems with the files that do not stop the analysis (a record cut short by a stop).
    notes: list[str] = field(default_factory=list)

    @property
    def settings(self) -> dict:
        return self.run["settings"]

    @property
    def env(self) -> dict:
        return self.run["env"]


def _json_lines(path: Path, notes: list[str]) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file, plain or gzip (by suffix); a last record cut short by a stop is
    left out with a note; anything else malformed is an error naming the file and line."""
    if not path.is_file():
        return
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = list(_lines_until_cut(f, path, notes))
    except (OSError, UnicodeDecodeError) as e:
        raise RunDirError(f"{path}: cannot read: {e}") from e
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) and not line.endswith("\n"):
                notes.append(f"{path.name}: its last line is cut short (the run stopped while writing it); left out")
                continue
            raise RunDirError(f"{path}: line {i}: not valid JSON: {e}") from e
        yield i, obj


def _lines_until_cut(f, path: Path, notes: list[str]) -> Iterator[str]:
    try:
        yield from f
    except (EOFError, lzma.LZMAError):
        notes.append(f"{path.name}: its last record is cut short (the run stopped while writing it); left out")


def _sealed_then_appended(run_dir: Path, sealed: str, notes: list[str]) -> Iterator[tuple[str, int, dict]]:
    """(file name, line number, object) of a sealed file's records, then of those still appended to its .gz; when
    the .gz's records are exactly the last records of the .xz (the run stopped while sealing), they are read once,
    with a note."""
    appending = APPENDING[sealed]
    old = list(_json_lines(run_dir / sealed, notes))
    new = list(_json_lines(run_dir / appending, notes))
    if new and _already_sealed([obj for _, obj in old], [obj for _, obj in new]):
        notes.append(f"{appending}: its {len(new)} record(s) are the last records of {sealed} already (the run "
                     f"stopped while sealing them); read once")
        new = []
    for name, records in ((sealed, old), (appending, new)):
        for i, obj in records:
            yield name, i, obj


def load(run_dir: Path) -> RunFiles:
    """Reads run.json, pairs.jsonl and the blocks. Raises RunDirError naming the file and the field; a pair recorded
    twice is an error too (the writer records a pair once: the file was edited, or joined with another run's)."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    path = run_dir / RUN
    if not path.is_file():
        raise RunDirError(f"{path}: missing (not a latency-diff run directory, or the run never started)")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunDirError(f"{path}: not valid JSON: {e}") from e
    if not isinstance(run, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    fmt = run.get("format")
    if fmt in OLD_FORMATS:
        raise RunDirError(f"{path}: format {fmt} is a run of {OLD_FORMATS[fmt]}; this analysis reads {RUN_FORMAT}"
                          + (" (git show fe56ca45:latency_diff/migrate.py converted those)"
                             if fmt == "latency-diff/run/3" else ""))
    if fmt != RUN_FORMAT:
        raise RunDirError(f"{path}: field 'format' is {fmt!r}, this analysis reads {RUN_FORMAT}")
    for key, kind in (("status", str), ("settings", dict), ("env", dict), ("servers", list)):
        if not isinstance(run.get(key), kind):
            raise RunDirError(f"{path}: missing field '{key}'")
    files = RunFiles(run_dir, run, [])
    lines: dict[tuple[str, int], int] = {}
    for i, obj in _json_lines(run_dir / PAIRS, files.notes):
        try:
            rec = PairRecord.from_json(obj, f"{run_dir / PAIRS}: line {i}")
        except RecordError as e:
            raise RunDirError(str(e)) from e
        first = lines.setdefault((rec.server, rec.pair), i)
        if first != i:
            raise RunDirError(f"{run_dir / PAIRS}: line {i}: {rec.server} pair {rec.pair} is on record already (line "
                              f"{first}); the run records a pair once, so the file was edited or joined with another "
                              "run's")
        files.pairs.append(rec)
    # sealed, then what a run that did not end left appended
    for name, i, obj in _sealed_then_appended(run_dir, BLOCKS, files.notes):
        try:
            b = BlockRecord.from_json(obj, f"{run_dir / name}: line {i}")
        except RecordError as e:
            raise RunDirError(str(e)) from e
        files.blocks.setdefault((b.server, b.pair), []).append(b)
    for (server, pair), blocks in files.blocks.items():
        if (server, pair) not in lines:
            files.notes.append(f"{BLOCKS}: {len(blocks)} block(s) of {server} pair {pair}, which has no record in "
                               f"{PAIRS} (the run stopped before writing it); not counted")
    return files


def logs(run_dir: Path) -> Iterator[dict]:
    """The records of the run's logs: {"kind", "tag", "text"}."""
    for _, _, obj in _sealed_then_appended(run_dir, LOGS, []):
        yield obj


def flamegraphs(run_dir: Path) -> Iterator[dict]:
    """The flame graphs of the run's profiles ({"kind", "tag", "text"}), in its logs for a run made before they had a
    file of their own; none when the run's profiles.jsonl.xz was left out."""
    for source in (PROFILES, LOGS):
        for _, _, obj in _sealed_then_appended(run_dir, source, []):
            if obj.get("kind") == "flamegraph":
                yield obj
