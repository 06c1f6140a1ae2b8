"""The report as a person reads it: the HTML parsed, known misses and spreads shown, provenance, figures."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from icml25.cli import main
from icml25.harness import Claim, Result, Run
from icml25.harness.report import short_value, write_report
from icml25.harness.runner import run_paper
from icml25.harness.stats import summary
from icml25.harness.store import committed_path, publish_full, result_path, write_json_atomic

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
fakes = importlib.import_module("harness_fakes")


def rich_reproduce(run: Run) -> Result:
    """Two findings (one a known miss, one with named sub-values), a check, and a titled figure."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, len(run.seeds)])
    fig.suptitle("Error against n")
    name = run.savefig(fig, "error_vs_n")
    return Result(metrics={}, figures=[name], claims=[
        Claim("A beats B | by far", criterion="err(A) <= 0.8 x err(B), every seed",
              measured=summary([0.1, 0.2, 0.3]), baseline=summary([1.0, 1.1, 1.2]), holds=True, paper="0.62 (Table 2)"),
        Claim("A is fast", criterion="t(A) / t(B) <= 0.5", measured={"ratio": 0.7, "seeds_holding": "1/3"},
              baseline={"ratio": 0.5}, holds=False),
        Claim("the weights sum to one", criterion="|sum - 1| < 1e-12", measured=0.0, holds=True, kind="check"),
    ])


class Page(HTMLParser):
    """The visible text, the ids, the images and the table cells of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self.ids, self.images, self.links = [], set(), [], []
        self._skip = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "img":
            self.images.append(attrs)
        if tag == "a":
            self.links.append(attrs.get("href", ""))
        self._skip = tag == "style"

    def handle_endtag(self, tag):
        self._skip = False

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.visible = " ".join(" ".join(page.text).split())
    return page


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A results folder with quick and full results of two fake papers, one an old-style committed record."""
    misses = {"A is fast": "timing needs a quiet machine"}
    rich = fakes.entry(rich_reproduce, "fa")
    rich.module.PAPER = type(rich.module.PAPER)(id="fa", title="fake fa", module="m", known_misses=misses)
    other = fakes.entry(fakes.good, "fb")
    by_id = {"fa": rich, "fb": other}
    monkeypatch.setattr("icml25.harness.report.catalogue", lambda: by_id)
    for scale in ("smoke", "quick", "full"):
        assert run_paper(rich, scale, root=tmp_path).status == "done"
    publish_full(tmp_path, "fa")
    result_path(tmp_path, "fa", "full").unlink()
    assert run_paper(other, "quick", root=tmp_path).status == "done"
    old = {"paper": "fb", "scale": "full", "seeds": [0], "metrics": {}, "figures": ["fb/full/line.png"],
           "claims": [{"text": "old claim", "paper": "x < y", "measured": 1.0, "baseline": 2.0, "holds": False}],
           "seconds": 3.0, "versions": {"python": "3.11"}, "git": "abc"}
    write_json_atomic(committed_path(tmp_path, "fb"), old)
    return tmp_path


def test_html_report_reads_as_a_person_sees_it(results):
    md, html_path = write_report(results)
    page = parse(html_path)
    assert "\\|" not in page.visible and "A beats B | by far" in page.visible
    assert {"fa", "fb", "summary", "provenance"} <= page.ids
    # every stored figure embedded, captioned by its title and scale (quick and full of fa, quick of fb)
    assert len(page.images) == 3 and all(img["src"].startswith("data:image/png;base64,") for img in page.images)
    assert "Error against n (quick scale, 3 seeds)" in page.visible
    assert "Error against n (full scale, 3 seeds)" in page.visible
    assert "error_vs_n" not in page.visible
    # spreads, paper's own number, known miss with its reason and link, sub-rows of a dict metric
    assert "0.2 ± 0.1 (n=3)" in page.visible and "0.62 (Table 2)" in page.visible
    assert "known miss : timing needs a quiet machine" in page.visible.replace("known miss:", "known miss :")
    assert any(link.endswith("#calibration-notes") for link in page.links)
    assert "↳ ratio" in page.visible and "↳ seeds_holding" in page.visible
    # findings and checks apart; only findings counted; smoke not shown as evidence
    assert "Findings" in page.visible and "Checks" in page.visible
    assert "smoke:" not in page.visible
    # an old record: its "paper" was the criterion; it fails; its figures were not stored
    assert "old claim – x < y" in page.visible and "fails" in page.visible
    assert "The full-scale figures were not stored with this result." in page.visible
    # provenance
    assert "icml25 reproduce fa --scale quick" in page.visible and "cores" in page.visible
    assert "(not recorded: date, machine, command)" in page.visible
    text = md.read_text(encoding="utf-8")
    assert "| quick | 2 | 2/3 | 1 | 0 | 1/1 |" in text and "| full | 2 | 1/3 | 1 | 1 | 1/1 |" in text
    assert "A beats B \\| by far" in text


def test_publish_puts_full_results_and_figures_beside_each_other(tmp_path, monkeypatch):
    entry = fakes.entry(rich_reproduce, "fa")
    monkeypatch.setattr("icml25.cli.lookup", lambda pid: entry)
    assert run_paper(entry, "full", root=tmp_path).status == "done"
    assert main(["publish", "fa", "--out", str(tmp_path)]) == 0
    record = json.loads(committed_path(tmp_path, "fa").read_text())
    assert record["figures"] == ["full/fa/error_vs_n.png"] and (tmp_path / "full/fa/error_vs_n.png").is_file()
    assert record["figure_titles"] == {"full/fa/error_vs_n.png": "Error against n"}
    assert main(["publish", "fb", "--out", str(tmp_path)]) == 2


def test_short_value_of_a_summary_and_of_one_seed():
    assert short_value(summary([1.0, 2.0, 3.0])) == "2 ± 1 (n=3)"
    assert short_value(summary([0.5])) == "0.5 (n=1)"
    assert short_value({"a": 1.23456, "b": None}) == "a: 1.235; b: –"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_report_screenshot_in_headless_chromium(results, tmp_path):
    _, html_path = write_report(results)
    shot = tmp_path / "report.png"
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
                           "--virtual-time-budget=3000",
                           f"--screenshot={shot}", html_path.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr[-500:]
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1200
    assert pixels[..., :3].std() > 0.05, "the screenshot is blank"


def test_benchmark_records_are_not_reported_as_stray_results(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "wilt.json").write_text('{"paper": "wilt"}')
    (tmp_path / "nope").mkdir()
    (tmp_path / "nope" / "quick.json").write_text('{"paper": "nope"}')
    warnings = []
    write_report(tmp_path, warn=warnings.append)
    assert warnings == [f"{tmp_path / 'nope' / 'quick.json'}: not the result of a registered paper and scale; skipped"]
