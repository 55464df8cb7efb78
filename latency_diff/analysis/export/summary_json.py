"""summary.json: the whole result model, machine-readable; times in ns, each field named with its unit.

The fields are the model's own (model.py), serialized by one rule: a field with a unit is written as
<name>_<unit>, raw data (units, histograms) is left out, a Summary is {mean, median, stdev, ci95_low,
ci95_high, n}, a warning is its text. Each pair also gets its per-client figures.
"""

from __future__ import annotations

import dataclasses
import json

from ...paired import PairEstimate
from ...stats import Summary
from ..model import Pair, RunResult
from ..warnings import RunWarning
from . import sentences

SUMMARY_FORMAT = "latency-diff/summary/4"


def to_json(value):
    """The JSON form of a model value, by the rule in the module comment."""
    if isinstance(value, Summary):
        return value.to_dict()
    if isinstance(value, RunWarning):
        return value.text
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            if f.metadata.get("export", True) is False:
                continue
            unit = f.metadata.get("unit")
            out[f"{f.name}_{unit}" if unit else f.name] = to_json(getattr(value, f.name))
        return out
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def _pair(p: Pair, ref: dict[str, float]) -> dict:
    out = to_json(p)
    out["valid"] = p.valid
    figures = {}
    for client, units in p.units.items():
        e: PairEstimate = p.estimate(client)  # type: ignore[assignment]
        figures[client] = {"diff_ns": e.scaled_ns(ref[client]) if client in ref else None, "ratio": e.ratio,
                           "unscaled_diff_ns": e.diff_ns, "base_rtt_ns": e.base_ns, "server_rtt_ns": e.server_ns,
                           "units": len(units)}
    out["clients"] = figures
    return out


def render(r: RunResult) -> str:
    servers = []
    for s in r.ranked + r.invalid:
        d = to_json(s)
        d["pairs"] = [_pair(p, r.ref) for p in s.pairs]
        d["ladder"], d["measure_share"] = s.ladder, s.measure_share
        servers.append(d)
    data = {"format": SUMMARY_FORMAT, "run_id": r.run_id, "status": r.status, "reason": r.reason,
            "settings": r.settings, "clients": list(r.clients), "primary_client": r.primary, "caveat": r.caveat,
            "ref_ns": r.ref, "host_speed": r.host_speed, "scaling": to_json(r.scaling),
            "measure_share": r.measure_share,
            "checks": sentences.checks(r), "warnings": sentences.all_warnings(r),
            "findings": sentences.findings(r), "env": r.env, **({"merge": r.merge} if r.merge else {}),
            "servers": servers}
    return dumps(data)


def dumps(data: dict) -> str:
    """summary.json's text: a line for each top-level entry and for each server, without spaces (indented, a default
    run's file was a third larger)."""
    def one(v) -> str:
        return json.dumps(v, separators=(",", ":"))
    lines = [f"{one(k)}:{one(v)}" for k, v in data.items() if k != "servers"]
    if "servers" in data:
        lines.append('"servers":[\n' + ",\n".join(one(x) for x in data["servers"]) + "]")
    return "{" + ",\n".join(lines) + "}\n"
