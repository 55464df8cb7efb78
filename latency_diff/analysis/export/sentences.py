"""The run's sentences, built once from the result model: its headline, legend, checks, warnings and findings,
and the set-up and server lines. They word what evaluate decided; nothing here judges."""

from __future__ import annotations

from ... import stopping
from ..model import RunResult
from ..warnings import RunWarning
from .tables import MET_THEN, NOT_SIGNIFICANT, PINNING_MEANING, ci_text, count, us


def headline(r: RunResult) -> str:
    cfg = r.settings
    jdk = r.env.get("jdk", {}).get("java.runtime.version") or r.env.get("jdk", {}).get("java.version") or "?"
    took = f" in {r.seconds / 60:.1f} min" if r.seconds else ""
    if "segment" in cfg:
        how = (f"the interleaved lean client in runs of {cfg.get('run_length')} requests, segments of "
               f"{count(cfg.get('segment'))}")
    else:
        how = f"ABBA blocks of {count(cfg.get('block_requests'))} requests"
    ref = r.ref.get(r.primary)
    at = f"; diffs at a baseline round trip of {us(ref)} us" if ref else ""
    against = r.baseline.name if r.baseline and r.baseline.name != "dummy" else "the dummy"
    return (f"latency-diff run {r.run_id} ({r.status}{took}{_part(r)}): process pairs against {against}, {how}, "
            "profile "
            f"{cfg.get('profile')}, precision target ±max({cfg.get('precision_floor_us')} us, "
            f"{cfg.get('precision_pct')}%){at}; {_pinning_short(cfg)}; clients {' and '.join(r.clients)} (diffs "
            f"from {r.primary}); JDK {jdk}; {r.env.get('cpu_model') or 'unknown CPU'}")


def _part(r: RunResult) -> str:
    """What part of a sharded run this is (", shard I of N"), or what a merged table is merged from; else nothing."""
    shard = r.settings.get("shard")
    if shard:
        return f", shard {shard['index']} of {shard['count']}"
    if r.merge:
        runs = r.merge["runs"]
        count = r.merge.get("count")
        return (f", merged from {len(runs)} shard(s) of {count}: {', '.join(x['run_id'] for x in runs)}" if count
                else f", from run {runs[0]['run_id']}")
    return ""


def _pinning_short(cfg: dict) -> str:
    mode = cfg.get("pinning") or "none"
    if mode == "none":
        return "pinning none"
    if mode == "shared":
        return f"pinning shared (client and servers on CPU {cfg.get('server_cpu')})"
    return f"pinning split (client on CPU {cfg.get('client_cpu')}, servers on CPU {cfg.get('server_cpu')})"


def host_speed_line(r: RunResult) -> str | None:
    """The host's speed in the run, once under the table: the rows are ratios at the median dummy round trip."""
    if r.merge:
        return _merged_reference_line(r)
    h = r.host_speed
    if not h:
        return None
    return (f"Host speed: the dummy's round trip over the run's {h['pairs']} pairs ranged {us(h['low_ns'])} to "
            f"{us(h['high_ns'])} us (sd {_pct(h['rel_sd'])}); every row is a ratio to its own pair's dummy, shown in "
            f"us at the median, {us(h['ref_ns'])} us. Compare other runs and hosts by ratio.")


def _merged_reference_line(r: RunResult) -> str:
    """A merged table's reference and hosts' spread, stated once under it."""
    m = r.merge
    refs = ", ".join(f"{us(x['ref_ns'])}" for x in m["runs"])
    h = r.host_speed or {}
    line = (f"Reference: every row is a ratio to its own pair's dummy, shown in us at {us(m['ref_ns'])} us, the median "
            f"of the shards' reference round trips ({refs} us"
            + (f"; the dummy's round trip over their {h['pairs']} pairs ranged {us(h['low_ns'])} to "
               f"{us(h['high_ns'])} us" if h.get("pairs") else "") + "). Each row's interval is its own shard's; a "
            "row measured on every shard (the anchors, the ladder) is pooled over them.")
    spread = m.get("host_spread") or {}
    if len(m["runs"]) < 2:
        return line + " Compare other runs and hosts by ratio."
    if spread.get("rel_sd") is None:
        return line + (" Hosts' spread: not known (no anchor has an interval on two shards or more), so rows of "
                       "different shards are compared as if their hosts were alike.")
    anchors = ", ".join(spread.get("anchors", {}))
    return line + (f" Hosts' spread: {_pct(spread['rel_sd'])} of a ratio (sd between shards beyond the pairs' noise, "
                   f"from the anchors {anchors}); it is in every comparison of rows of different shards (the "
                   f"{NOT_SIGNIFICANT} marks, the variant and framework tables). Compare other runs and hosts by "
                   "ratio.")


def pinning_sentence(r: RunResult) -> str:
    short = _pinning_short(r.settings)
    return f"{short[0].upper()}{short[1:]}: {PINNING_MEANING[r.settings.get('pinning') or 'none']}."


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def legend(r: RunResult) -> str:
    ref = r.ref.get(r.primary)
    text = (f"diff: what the server adds to a round trip over the dummy ({r.primary} client), scaled: per pair of "
            "fresh processes (server and dummy side by side), the median over its units of server / dummy round trip "
            f"(each a trimmed mean, 1% cut at each end; ab: its mean), minus 1, times the run's reference baseline "
            f"round trip ({us(ref)} us: the median of its pairs' dummy round trips); then the mean over pairs with a "
            "Student-t 95% interval of the ratio, so JVM-to-JVM variation of both is in it, its sd combined with what "
            "the server's earlier runs on this kind of host say of its spread (or the kit's shipped prior), never "
            "below the units' noise, and with the server's spread between runs, which more pairs cannot narrow; the "
            "microsecond interval is the ratio's times the reference. "
            f"{NOT_SIGNIFICANT}: not significantly "
            "different from the row above, do not rank the two (not transitive: a row may be apart from the one two "
            "above it); ratio: server over dummy round trip; target: the "
            "half-width the ratio's interval had to reach (in us at the reference); met: whether it did; stopped: why "
            "the run gave the server no more pairs (met, budget, out of reach: the pairs it needed would cost over "
            f"{stopping.REACH:g} budgets, max pairs, failed; {MET_THEN}: the look that "
            "stopped it met the target at the reference round trip and spread between JVMs of that moment, and the "
            "run's final ones, which this table uses, put it over); measuring: the share of the "
            "server's time on "
            "the measured CPU spent measuring; unscaled: the diff without the scaling; CPU diff: the server's CPU "
            "time per request minus the dummy's (/proc, both without their JIT compiler threads), a cross-check under "
            "shared pinning; alloc/req: bytes the server JVM allocated per request (the kit's java agent).")
    return _other_client_note(r) + text


def _other_client_note(r: RunResult) -> str:
    """The legend's first sentence when a row's diff is another client's than the run's (a server the headline
    client could not measure, e.g. an HTTP/1.1 server with ab); else nothing."""
    other = {s.primary for s in r.ranked if not s.baseline and s.primary != r.primary}
    if not other:
        return ""
    marks = " or ".join(f"({c})" for c in sorted(other))
    why = " (an HTTP/1.1 server: ab speaks HTTP/1.0 only)" if r.primary == "ab" else ""
    refs = ", ".join(f"{c}'s {us(r.ref.get(c))} us" for c in sorted(other))
    return (f"{marks} after a diff: the {r.primary} client measured none of that server's pairs{why}, so its diff "
            f"(and its ratio and unscaled diff) is the named client's, at that client's reference round trip "
            f"({refs}, not the run's {us(r.ref.get(r.primary))} us): compare it with the other rows' {r.primary} "
            "diffs only loosely. ")


def checks(r: RunResult) -> list[str]:
    """The method's own checks, in every run: what evaluate decided (its warnings, a control's truth), in words."""
    from .. import evaluate as ev
    from .. import warnings as w
    warned = {type(x) for x in r.warnings}
    out = []
    for s in r.ranked:
        t = s.truth
        if t is None:
            continue
        if t["ns"] is None:
            out.append(f"control {s.name}: no pair left its known diff (no TRUTH line in its logs)")
            continue
        verdict = {True: "holds it, as it must", False: "does NOT hold it", None: "no interval to hold it"}[t["held"]]
        out.append(f"control {s.name}: known diff {us(t['ns'])} us (its processes' own clock, {t['pairs']} pairs, "
                   f"modes {', '.join(t['modes'])}), measured {us(s.diff.mean)} us {ci_text(s.diff)}: {verdict}")
    null = r.null
    if null is not None and null.valid and null.diff.ci95_low is not None:
        base = r.baseline.name if r.baseline else "dummy"
        out.append(f"null pair ({base} against a second {base} process): {null.diff.mean / 1000:+.2f} us "
                   f"{ci_text(null.diff)} over {null.diff.n} pairs: " + (
                       "does NOT contain 0 (see warnings)" if w.NullPairBiased in warned else "contains 0, as it must"))
    elif null is not None:
        out.append("null pair: " + (null.reason or "fewer than 2 pairs, no interval"))
    ratio = r.floor
    if ratio is not None and ratio.rel_spread is not None:
        out.append(f"floor over dummy: ratio {ratio.mean:.3f}, relative sd {ratio.rel_spread:.1%} over {ratio.n} "
                   "pairs: " + (f"NOT steady (over {ev.FLOOR_RATIO_SD_MAX:.1%}; see warnings)"
                                if w.FloorRatioUnstable in warned else "steady, as it must be"))
    sc = r.scaling
    if sc is not None and sc.removed is not None:
        out.append(f"scaling: dividing each pair by its own baseline round trip removed {sc.removed:.0%} of the "
                   f"between-pair variance ({sc.servers} servers with 3 or more pairs; median sd ratio "
                   f"{sc.median_sd_ratio:.2f})")
    if sc is not None and sc.slope is not None:
        head = (f"scaling check: the scaled diffs' elasticity to the pair's baseline round trip is {sc.slope:+.2f} "
                f"({w.p_text(sc.slope_p)} over {sc.slope_pairs} pairs of {sc.slope_servers} servers; 0 when a slower "
                "machine multiplies the server's and the dummy's round trips alike, as the scaling assumes): ")
        if sc.fails:
            out.append(head + f"NOT proportional: it moves {sc.worst}'s diff by {us(sc.worst_shift)} us, more than "
                       "its target (see warnings)")
        elif sc.significant and sc.worst is not None:
            out.append(head + f"significant, but it moves no diff by more than its target (most: {sc.worst}'s, by "
                       f"{us(sc.worst_shift)} us against ±{us(sc.worst_target)})")
        else:
            out.append(head + "not significant: nothing shows slowdowns that hit the server and the dummy unlike")
    measured = [s for s in r.ranked if not s.ladder and s.cpu_diff is not None]
    if measured and r.settings.get("pinning") == "shared":
        close = [s for s in measured if not any(isinstance(x, w.CpuGap | w.CpuInTail) for x in s.warnings)]
        out.append(f"CPU cross-check: the CPU-time diff is near the latency diff (in some pair within "
                   f"{ev.CPU_CHECK_TICKS} /proc ticks per process plus max({ev.CPU_CHECK_ABS_NS / 1000:.1f} us, "
                   f"{ev.CPU_CHECK_REL:.0%})) for {len(close)} of {len(measured)} servers (CPU diff column"
                   + ("; the others under findings)" if len(close) < len(measured) else ")"))
    busy = r.env.get("busy")
    if busy and busy.get("worst_share") is not None:
        out.append(f"busy machine: other processes took {busy['other_share']:.1%} of the machine's CPU time during "
                   f"the run, {busy['worst_share']:.1%} in its busiest {busy['worst_window_s']:.0f} s: "
                   + (f"BUSY (over {ev.BUSY_SHARE_MAX:.0%}; see warnings)" if w.BusyMachine in warned
                      else "quiet enough"))
    both = [s for s in r.ranked if s.clients_agree is not None]
    if both:
        agree = sum(1 for s in both if s.clients_agree)
        out.append(f"two clients: ab's and the lean client's diff intervals overlap for {agree} of {len(both)} servers")
    met = [s for s in r.ranked if not s.baseline and s.target_met is not None and s.diff.n >= 2]
    if met:
        out.append(f"precision: {sum(1 for s in met if s.target_met)} of {len(met)} rows met the target")
    if r.measure_share is not None:
        out.append(f"time: measuring took {r.measure_share:.0%} of the measured CPU's {r.pair_seconds / 60:.1f} min of "
                   "pairs; the rest waited for processes to be prepared, or moved and stopped them")
    return out


#: What the findings are (warnings.RunWarning.finding), above their list.
FINDINGS_TEXT = ("What the servers did that their diffs alone do not show: the run is sound, and none of these asks "
                 "for an action.")


def all_warnings(r: RunResult) -> list[str]:
    """The run's warnings, then each server's that ask the reader to act (not its findings: findings); one line for a
    warning that several servers share, grouped by kind."""
    left_out = ([r.settings["left_out_reason"]] if r.settings.get("left_out_reason") else []) + \
        list(r.settings.get("notes") or [])
    return left_out + [x.text for x in r.warnings] + _server_lines(r, finding=False)


def findings(r: RunResult) -> list[str]:
    """What the servers did that the numbers alone do not show (warnings.RunWarning.finding), grouped as warnings."""
    return _server_lines(r, finding=True)


def _server_lines(r: RunResult, *, finding: bool) -> list[str]:
    names: dict[str, list[str]] = {}
    kinds: dict[str, int] = {}
    for s in r.ranked:
        for x in s.warnings:
            if x.finding == finding:
                names.setdefault(x.text, []).append(s.name)
                kinds.setdefault(x.text, _kind_order(x))
    lines = sorted(names.items(), key=lambda kv: kinds[kv[0]])
    return [f"{n[0]}: {t}" if len(n) == 1 else f"{len(n)} servers ({', '.join(n)}): {t}" for t, n in lines]


def _kind_order(x: RunWarning) -> int:
    from .. import warnings as w
    order = [w.TooFewPairs, w.TargetMissed, w.OutlierPair, w.ClientsDisagree, w.CpuInTail, w.CpuGap, w.JitBusy,
             w.NoAgent]
    return next((i for i, k in enumerate(order) if isinstance(x, k)), len(order))


def setup_lines(r: RunResult) -> list[str]:
    """The run's set-up and machine, one fact a line (markdown: `code` for flags)."""
    env = r.env
    jdk = env.get("jdk", {})
    kit = env.get("kit", {})
    cfg = r.settings
    if "segment" in cfg:
        measured = (f"the interleaved lean client: {cfg.get('segments')} segments of {count(cfg.get('segment'))} "
                    f"requests per process in a first pair (then adapted), runs of {cfg.get('run_length')} in ABBA "
                    f"order, {count(cfg.get('pair_warmup'))} untimed first; ab: {cfg.get('ab_quads')} ABBA quad(s) "
                    f"of {count(cfg.get('ab_requests'))}-request blocks; {count(cfg.get('warmup'))} warm-up "
                    f"requests per process, then JIT wait: {cfg.get('settle')}")
    else:
        measured = (f"ABBA quads of blocks of {count(cfg.get('block_requests'))} timed requests after "
                    f"{count(cfg.get('block_warmup'))} untimed ones, {cfg.get('quads')} quads per client in a first "
                    f"pair; {count(cfg.get('warmup'))} warm-up requests per process")
    return [f"Profile {cfg.get('profile')}: {cfg.get('min_pairs')}-{cfg.get('max_pairs')} process pairs per server, "
            f"budget {cfg.get('budget_s')} s per server"
            + (f", and up to {cfg['borrow_budgets']:g} budget(s) more borrowed from what others left unspent"
               if cfg.get("borrow_budgets") else "")
            + f"; {measured}; clients: {' and '.join(r.clients)}; HTTP: "
            f"{cfg.get('http')}",
            pinning_sentence(r) + (f" Processes were prepared on CPU {cfg['prepare_cpu']} while CPU "
                                   f"{cfg.get('server_cpu')} measured." if cfg.get("prepare_cpu") is not None else ""),
            f"JVM: {jdk.get('java.vm.name', '?')} {jdk.get('java.runtime.version', jdk.get('java.version', '?'))}"
            f" ({jdk.get('java.vendor', '?')}), flags `{' '.join(cfg.get('jvm_flags', []))}`",
            f"Machine: {env.get('cpu_model')}, {env.get('cpus_online')} CPUs, kernel {env.get('kernel')}, "
            f"{env.get('os')}, virtualization {env.get('virtualization')}, container {env.get('container')}"
            + (f" ({env['container_evidence']})" if env.get("container_evidence") else ""),
            f"ab: {env.get('ab')}",
            f"Kit commit: {kit.get('commit')}" + (" (with uncommitted changes)" if kit.get("dirty") else "")
            + (f" ({kit['source']})" if kit.get("source") else "")]


def server_lines(r: RunResult) -> list[str]:
    """One line per server: library, threading, HTTP version, notes (markdown: **name**)."""
    out = []
    for s in r.ranked + r.invalid:
        lib = f"{s.library} {s.library_version or ''}".strip() if s.library else "no library"
        flags = f" Own JVM flags: `{' '.join(s.jvm_flags)}`." if s.jvm_flags else ""
        on = f" Runs on {s.runs_on}." if s.runs_on else ""
        out.append(f"**{s.name}** ({s.display}; {lib}; {s.threading}; HTTP/{s.http}): {s.notes}{on}{flags}")
    return out


