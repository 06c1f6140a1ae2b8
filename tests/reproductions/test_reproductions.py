"""Every registered reproduction: end to end at smoke scale, and its claims at quick scale.

The quick tests are the CI check of each paper's headline claims.  A claim a faithful
implementation does not meet at quick scale must be listed in ``PAPER.known_misses`` with a
one-line reason (the measured numbers go to the docs page's "Calibration notes"); it is then
expected to fail.  A claim made only at full scale may be a known miss too: it must then be a claim of
the committed full-scale record ``results/full/<id>.json``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icml25.harness.registry import implemented
from icml25.harness.runner import run_paper
from icml25.harness.store import committed_path, load_result

ROOT = Path(__file__).resolve().parents[2]
IMPLEMENTED = [e for e in implemented() if e.status == "implemented"]
IDS = [e.id for e in IMPLEMENTED]
TIMING_WORDS = ("seconds", "time", "speedup", "ratio_wall")


def deterministic(metrics):
    """Metrics with wall-clock-dependent entries removed (keys naming seconds, time or speed-ups)."""
    if isinstance(metrics, dict):
        return {k: deterministic(v) for k, v in metrics.items() if not any(w in k for w in TIMING_WORDS)}
    if isinstance(metrics, list):
        return [deterministic(v) for v in metrics]
    return metrics


def test_no_reproduction_is_broken():
    broken = {e.id: e.import_error or e.status for e in implemented() if e.status != "implemented"}
    assert broken == {}


@pytest.mark.parametrize("entry", IMPLEMENTED, ids=IDS)
def test_smoke_runs_end_to_end_and_is_deterministic(entry, tmp_path):
    first = run_paper(entry, "smoke", root=tmp_path / "a")
    assert first.status == "done", first.error
    record = first.record
    assert record["claims"], "a reproduction must make at least one claim"
    assert record["figures"], "a reproduction must draw at least one figure"
    for fig in record["figures"]:
        assert (tmp_path / "a" / fig).is_file()
    second = run_paper(entry, "smoke", root=tmp_path / "b")
    assert second.status == "done", second.error
    assert deterministic(second.record["metrics"]) == deterministic(record["metrics"])
    assert [c["text"] for c in second.record["claims"]] == [c["text"] for c in record["claims"]]


@pytest.mark.quick
@pytest.mark.parametrize("entry", IMPLEMENTED, ids=IDS)
def test_quick_claims_hold(entry, tmp_path):
    outcome = run_paper(entry, "quick", root=tmp_path)
    assert outcome.status == "done", outcome.error
    paper = entry.paper
    claims = outcome.record["claims"]
    assert all(reason for reason in paper.known_misses.values()), "every known miss needs a one-line reason"
    committed = load_result(committed_path(ROOT / "results", entry.id)) or {"claims": []}
    full = {c["text"] for c in committed["claims"]}
    unknown = set(paper.known_misses) - {c["text"] for c in claims} - full
    assert not unknown, f"known_misses names claims the reproduction does not make: {unknown}"
    failing = [c for c in claims if not c["holds"] and c["text"] not in paper.known_misses]
    assert failing == [], f"claims that do not hold at quick scale: {failing}"
    # Budget guard against gross blow-ups; the budget itself is checked on a quiet machine.
    assert outcome.seconds < 3 * paper.quick_budget_s, f"{outcome.seconds:.0f} s at quick scale"
