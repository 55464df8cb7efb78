"""Settings: flags, LATENCY_DIFF_ variables and their parsing, and the errors for bad values."""

import pytest
from runs import resolve

from latency_diff import settings
from latency_diff.settings import RunError


@pytest.mark.parametrize("value, expected", [("1", True), ("yes", True), ("ON", True), ("true", True),
                                             ("0", False), ("no", False), ("off", False), ("false", False)])
def test_booleans(value, expected, monkeypatch):
    s = resolve([], monkeypatch, LATENCY_DIFF_ALLOW_CONCURRENT=value)
    assert s.allow_concurrent is expected and s.sources["allow_concurrent"] == "LATENCY_DIFF_ALLOW_CONCURRENT"


def test_a_bad_boolean_is_an_error_naming_the_variable(monkeypatch):
    with pytest.raises(RunError, match=r"LATENCY_DIFF_ALLOW_CONCURRENT='maybe': expected 1/0, true/false"):
        resolve([], monkeypatch, LATENCY_DIFF_ALLOW_CONCURRENT="maybe")


def test_quick_by_variable_and_flag_wins(monkeypatch):
    s = resolve([], monkeypatch, LATENCY_DIFF_QUICK="1")
    assert s.profile == "quick" and s.sources["profile"] == "LATENCY_DIFF_QUICK"
    s = resolve(["--budget", "30"], monkeypatch, LATENCY_DIFF_BUDGET="120")
    assert s.budget == 30 and s.sources["budget"] == "flag"
    s = resolve([], monkeypatch, LATENCY_DIFF_BUDGET="120")
    assert s.budget == 120.0 and s.sources["budget"] == "LATENCY_DIFF_BUDGET"


@pytest.mark.parametrize("env, message", [
    ({"LATENCY_DIFF_BUDGET": "abc"}, "LATENCY_DIFF_BUDGET='abc': could not convert string to float"),
    ({"LATENCY_DIFF_BUDGET": "-5"}, "LATENCY_DIFF_BUDGET='-5': -5 is negative"),
    ({"LATENCY_DIFF_MIN_PAIRS": "0"}, "LATENCY_DIFF_MIN_PAIRS='0': 0 is not a positive whole number"),
    ({"LATENCY_DIFF_PINNING": "sideways"}, "unknown pinning 'sideways'; choose one of split, shared, none"),
    ({"LATENCY_DIFF_PORT": "65530"}, "--port 65530: the run needs ports P to P+8"),
])
def test_bad_values_are_errors(env, message, monkeypatch):
    with pytest.raises(RunError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        resolve([], monkeypatch, **env)


def test_http11_means_the_lean_client(monkeypatch):
    s = resolve(["--http", "1.1"], monkeypatch)
    assert s.clients == ("lean",)
    with pytest.raises(RunError, match="lean client only"):
        resolve(["--http", "1.1", "--client", "both"], monkeypatch)


def test_a_segment_must_hold_whole_abba_quads_of_runs(monkeypatch):
    with pytest.raises(RunError, match=r"--segment 100 is not a multiple of 2 x --run-length \(512\)"):
        resolve(["--segment", "100"], monkeypatch)


def test_preparing_ahead_follows_the_pinning(monkeypatch):
    import os
    usable = sorted(os.sched_getaffinity(0))
    s = resolve([], monkeypatch)
    assert s.pinning == "shared" and s.prepare_cpu == (usable[0] if len(usable) > 1 else None)
    assert s.prepare_cpu != s.server_cpu
    assert resolve(["--prepare-ahead", "off"], monkeypatch).prepare_cpu is None
    assert resolve(["--pinning", "none"], monkeypatch).prepare_cpu is None
    with pytest.raises(RunError, match="--prepare-ahead on needs --pinning shared"):
        resolve(["--pinning", "none", "--prepare-ahead", "on"], monkeypatch)


def test_the_original_profile_is_abs_own_run(monkeypatch):
    s = resolve(["--profile", "original"], monkeypatch)
    # Each process serves the study's 10,000,000 requests: two blocks of an ABBA quad each.
    assert s.clients == ("ab",) and 2 * s.ab_requests == 10_000_000 and s.ab_quads == 1 and s.warmup == 0


def test_http_11_says_that_ab_is_dropped(monkeypatch):
    s = resolve(["--http", "1.1", "--servers", "undertow"], monkeypatch)
    assert s.clients == ("lean",)
    assert s.notes == ["--http 1.1: the lean client alone measures (ab speaks HTTP/1.0 only)"]
    assert s.to_dict()["notes"] == s.notes
    assert "notes" not in resolve(["--servers", "undertow"], monkeypatch).to_dict()


def test_lend_cpu_is_on_by_default_and_can_be_turned_off(monkeypatch):
    assert resolve([], monkeypatch).lend_cpu is True
    assert resolve(["--lend-cpu", "off"], monkeypatch).lend_cpu is False
    assert resolve([], monkeypatch, LATENCY_DIFF_LEND_CPU="off").lend_cpu is False


def test_the_agent_is_on_by_default_and_off_needs_a_jit_wait_of_its_own(monkeypatch):
    assert resolve([], monkeypatch).agent is True
    with pytest.raises(RunError, match="--agent off: the JIT wait --settle queue asks the agent"):
        resolve(["--agent", "off"], monkeypatch)  # the default profile waits on the agent's compile queue
    off = resolve(["--agent", "off", "--settle", "cpu"], monkeypatch)
    assert off.agent is False and off.to_dict()["agent"] is False
    assert resolve(["--quick"], monkeypatch, LATENCY_DIFF_AGENT="off").agent is False  # quick does not wait


def test_profiles_says_whether_a_run_needs_async_profiler(monkeypatch):
    for k in list(__import__("os").environ):
        if k.startswith("LATENCY_DIFF_"):
            monkeypatch.delenv(k)
    assert settings.profiles([]) is True
    assert settings.profiles(["--quick"]) is False
    assert settings.profiles(["--profile-requests", "0"]) is False
    assert settings.profiles(["--no-such-option"]) is True  # the driver reports it, not the set-up


def test_the_gate_goes_with_a_head_to_head_and_a_margin_it_can_read(monkeypatch):
    s = resolve(["--compare", "undertow", "jetty", "--fail-if-slower", "10%"], monkeypatch)
    assert str(s.fail_if_slower) == "10%" and s.to_dict()["fail_if_slower"] == "10%"
    assert "fail_if_slower" not in resolve(["--servers", "undertow"], monkeypatch).to_dict()
    with pytest.raises(RunError, match=r"--fail-if-slower gates B against A: give --compare A B too"):
        resolve(["--servers", "undertow", "--fail-if-slower", "1us"], monkeypatch)
    with pytest.raises(RunError, match=r"--fail-if-slower 1ms: give a margin in microseconds or percent"):
        resolve(["--compare", "undertow", "jetty", "--fail-if-slower", "1ms"], monkeypatch)
