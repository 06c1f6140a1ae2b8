"""The harness: contract validation, atomic store, resume, isolation of failures, report."""

from __future__ import annotations

import json
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.registry import Entry, catalogue, closest, lookup
from icml25.harness.report import catalogue_markdown, write_report
from icml25.harness.runner import run_paper
from icml25.harness.store import load_result, result_path, write_json_atomic
from icml25.harness.timing import interleaved_seconds, median_seconds


def fake_entry(reproduce, pid="cross_conformal", seeds=(0, 1)) -> Entry:
    row = dict(lookup(pid).__dict__)
    row.pop("module"), row.pop("import_error")
    module = types.SimpleNamespace(
        PAPER=Paper(id=pid, title="t", seed="s.txt", abstract=1, module="m", default_seeds=seeds),
        reproduce=reproduce,
    )
    return Entry(**row, module=module)


def good_reproduce(run: Run) -> Result:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    name = run.savefig(fig, "line")
    rng = np.random.default_rng(run.seeds[0])
    value = float(rng.normal())
    return Result(metrics={"value": value, "array": np.arange(3)},
                  claims=[Claim("x beats y", "x < y", 1.0, 2.0, holds=True)], figures=[name])


def test_catalogue_has_all_38_papers_with_abstracts():
    entries = catalogue()
    assert len(entries) == 38
    assert all(e.abstract and e.field and e.title for e in entries.values())
    assert {e.status for e in entries.values()} <= {"implemented", "planned"}


def test_implemented_papers_declare_matching_paper_metadata():
    for entry in catalogue().values():
        if entry.module is not None:
            paper = entry.paper
            assert paper.id == entry.id
            assert (paper.seed, paper.abstract) == (entry.seed, entry.abstract_index)
            assert callable(entry.module.reproduce)


def test_lookup_unknown_id_names_closest():
    with pytest.raises(KeyError, match="did you mean ultratwd"):
        lookup("ultratw")
    assert "cross_conformal" in closest("cross_conformel")


def test_paper_and_run_validation():
    with pytest.raises(ValueError, match="identifier"):
        Paper(id="bad-id", title="t", seed="s", abstract=1, module="m")
    with pytest.raises(ValueError, match="scale"):
        Run(scale="huge", seeds=(0,), out=".")
    with pytest.raises(ValueError, match="seeds"):
        Run(scale="quick", seeds=(), out=".")
    with pytest.raises(TypeError, match="Claim"):
        Result(metrics={}, claims=["not a claim"])


def test_run_stores_atomically_and_resumes(tmp_path):
    entry = fake_entry(good_reproduce)
    first = run_paper(entry, "smoke", root=tmp_path)
    assert first.status == "done"
    stored = json.loads(result_path(tmp_path, entry.id, "smoke").read_text())
    assert stored["seeds"] == [0, 1] and stored["metrics"]["array"] == [0, 1, 2]
    assert stored["claims"][0]["holds"] is True
    assert (tmp_path / stored["figures"][0]).is_file()
    assert set(stored) >= {"paper", "scale", "seeds", "metrics", "claims", "figures", "seconds", "versions", "git"}
    second = run_paper(entry, "smoke", root=tmp_path)
    assert second.status == "skipped" and second.record["metrics"] == stored["metrics"]
    third = run_paper(entry, "smoke", root=tmp_path, force=True)
    assert third.status == "done"
    assert third.record["metrics"] == stored["metrics"]  # same seed, same numbers
    other_seeds = run_paper(entry, "smoke", root=tmp_path, n_seeds=3)
    assert other_seeds.status == "done" and other_seeds.record["seeds"] == [0, 1, 2]


def test_failing_reproduction_is_reported_not_raised(tmp_path):
    def broken(run):
        raise RuntimeError("boom")

    outcome = run_paper(fake_entry(broken), "smoke", root=tmp_path)
    assert outcome.status == "failed" and "boom" in outcome.error
    assert not result_path(tmp_path, "cross_conformal", "smoke").exists()


def test_wrong_return_type_is_a_failure(tmp_path):
    outcome = run_paper(fake_entry(lambda run: {"metrics": {}}), "smoke", root=tmp_path)
    assert outcome.status == "failed" and "Result" in outcome.error


def test_interrupt_leaves_no_partial_result(tmp_path):
    def interrupted(run):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_paper(fake_entry(interrupted), "quick", root=tmp_path)
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert leftovers == []


def test_invalid_scale_and_seed_count(tmp_path):
    entry = fake_entry(good_reproduce)
    with pytest.raises(ValueError, match="scale"):
        run_paper(entry, "huge", root=tmp_path)
    with pytest.raises(ValueError, match="positive integer"):
        run_paper(entry, "smoke", root=tmp_path, n_seeds=0)


def test_atomic_write_keeps_old_file_when_serialisation_fails(tmp_path):
    path = tmp_path / "x.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(ValueError):
        write_json_atomic(path, {"a": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1}
    assert list(tmp_path.iterdir()) == [path]


def test_corrupt_or_foreign_json_is_ignored(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert load_result(bad) is None
    bad.write_text(json.dumps({"hello": "world"}))
    assert load_result(bad) is None


def test_claim_serialises_numpy_and_nonfinite():
    claim = Claim("c", "p", np.float64(0.5), float("inf"), holds=np.bool_(True))
    data = claim.to_json()
    assert data == {"text": "c", "kind": "finding", "paper": None, "criterion": "p", "measured": 0.5,
                    "baseline": "inf", "holds": True}
    json.dumps(data, allow_nan=False)


def test_report_embeds_figures_and_claims(tmp_path, monkeypatch):
    entry = fake_entry(good_reproduce)
    run_paper(entry, "quick", root=tmp_path)
    monkeypatch.setattr("icml25.harness.report.catalogue", lambda: {entry.id: entry})
    md, page = write_report(tmp_path)
    text = page.read_text()
    assert "data:image/png;base64," in text and "x beats y" in text
    assert "| quick | x beats y | x < y | 1 | 2 | yes |" in md.read_text()


def test_catalogue_markdown_lists_every_paper():
    table = catalogue_markdown(catalogue().values())
    assert table.count("\n") == 38 + 2


def test_committed_full_results_are_valid_records():
    root = Path(__file__).resolve().parents[2] / "results" / "full"
    for path in sorted(root.glob("*.json")):
        record = load_result(path)
        assert record is not None, f"{path} is not a result record"
        assert record["paper"] == path.stem and record["scale"] == "full"
        assert lookup(path.stem).status == "implemented"


def test_median_seconds():
    calls = []
    assert median_seconds(lambda: calls.append(1), 5) >= 0 and len(calls) == 5
    with pytest.raises(ValueError, match="repeats"):
        median_seconds(lambda: None, 0)


def test_interleaved_seconds_takes_turns_and_drops_warmup():
    calls = []
    times = interleaved_seconds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3, warmup=2)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3}
    assert all(t >= 0 for v in times.values() for t in v)


def test_interleaved_seconds_reads_the_given_clock():
    ticks = iter(range(100))
    times = interleaved_seconds({"a": lambda: None}, 2, warmup=1, clock=lambda: float(next(ticks)))
    assert times == {"a": [1.0, 1.0]}


def test_interleaved_seconds_rejects_a_clock_that_is_not_callable():
    with pytest.raises(TypeError, match="clock"):
        interleaved_seconds({"a": lambda: None}, 2, clock=1.0)


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"repeats": 2.0}, {"repeats": True}, {"repeats": 2, "warmup": -1}])
def test_interleaved_seconds_rejects_bad_counts(kwargs):
    with pytest.raises(ValueError, match="repeats|warmup"):
        interleaved_seconds({"a": lambda: None}, **kwargs)


def test_interleaved_seconds_rejects_no_callables():
    with pytest.raises(ValueError, match="at least one"):
        interleaved_seconds({}, 2)
