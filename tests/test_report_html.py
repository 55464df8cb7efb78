"""report.html opened in headless Chromium: the tables and plots are laid out, sorting works, the page
needs no network. Chromium comes from scripts/test.sh (LATENCY_DIFF_CHROMIUM, or chromium on PATH)."""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib import image
from runs import make_paired_run

from latency_diff.analysis import evaluate, export

SERVERS = {"undertow": [(20_000, 27_000), (21_000, 28_500), (19_000, 26_500)],
           "jetty": [(20_000, 50_000), (20_000, 52_000), (20_000, 49_000)],
           "vertx": [(20_000, 25_000), (20_000, 25_500), (20_000, 24_800)]}


def chromium() -> str:
    found = os.environ.get("LATENCY_DIFF_CHROMIUM") or next(
        (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if not found:
        pytest.fail("no Chromium: ./scripts/test.sh installs it (apt-get install chromium), or set "
                    "LATENCY_DIFF_CHROMIUM")
    return found


def _browser(tmp_path, *args: str) -> subprocess.CompletedProcess:
    # A profile of its own, no network, no GPU; --no-sandbox since tests may run as root (in CI, in a container).
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9", "--window-size=1300,2600",
           *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    run = make_paired_run(tmp, SERVERS)
    export.write_all(run, evaluate.build(run))
    return run / "report.html"


def _rendered(dom: str) -> dict:
    m = re.search(r'data-rendered="([^"]*)"', dom)
    assert m, "the page's script did not run"
    return json.loads(m.group(1).replace("&quot;", '"'))


def _main_rows(dom: str) -> list[str]:
    body = re.search(r'<table class="sortable main">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
    return re.findall(r"<tr><td>([^<]*)</td>", body)


def test_the_page_is_self_contained(page):
    text = page.read_text()
    assert not re.search(r'(src|href)="(https?:)?//', text), "the page loads something from the network"
    assert "<link" not in text and "<img" not in text  # styles and plots are inline
    assert text.count("<div class=\"plot\"><svg") == 2 and text.count("<table") >= 4


@pytest.mark.slow  # Chromium: the full tier installs it
def test_chromium_lays_out_the_tables_and_both_plots(tmp_path, page):
    dom = _browser(tmp_path, "--dump-dom", page.as_uri()).stdout
    got = _rendered(dom)
    # The dummy and the three servers in the main table; the sections' tables; both plots with a size.
    assert got["rows"] == 4 and got["plots"] == 2 and got["tables"] >= 4, got
    assert _main_rows(dom) == ["dummy (baseline)", "vertx", "undertow", "jetty"]  # ranked by the scaled diff


@pytest.mark.slow  # Chromium: the full tier installs it
def test_sorting_by_a_column_reorders_the_rows(tmp_path, page):
    # Column 0 is the server's name: ascending by name.
    dom = _browser(tmp_path, "--dump-dom", page.as_uri() + "#sort=0").stdout
    assert _main_rows(dom) == ["dummy (baseline)", "jetty", "undertow", "vertx"]


@pytest.mark.slow  # Chromium: the full tier installs it
def test_the_screenshot_shows_a_page_not_a_blank(tmp_path, page):
    shot = tmp_path / "shot.png"
    _browser(tmp_path, f"--screenshot={shot}", page.as_uri())
    pixels = image.imread(shot)[..., :3]
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1200
    ink = (pixels.mean(axis=2) < 0.6).mean()  # dark pixels: text, table rules, plot lines and bars
    assert 0.005 < ink < 0.5, ink
    colours = np.unique((pixels * 15).round().reshape(-1, 3), axis=0)
    assert len(colours) > 10  # the plots' colours, not only black text on white
