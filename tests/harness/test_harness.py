"""The harness: contract validation, atomic store, resume, isolation of failures, report."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.registry import EXTRA_MODULES, Entry, catalogue, closest, declared, implemented, lookup
from icml25.harness.report import catalogue_markdown
from icml25.harness.runner import run_paper
from icml25.harness.store import load_result, result_path, write_json_atomic
from icml25.harness.timing import interleaved_seconds, median_seconds


def fake_entry(reproduce, pid="cross_conformal", seeds=(0, 1), known_misses=None) -> Entry:
    real = lookup(pid)
    module = types.SimpleNamespace(
        PAPER=Paper(id=pid, title="t", module="m", default_seeds=seeds, known_misses=known_misses or {}),
        reproduce=reproduce,
    )
    return Entry(real.id, real.title, real.short_title, real.field, authors=real.authors, venue=real.venue,
                 arxiv=real.arxiv, url=real.url, abstract=real.abstract, module=module)


def good_reproduce(run: Run) -> Result:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.set_title("a line")
    name = run.savefig(fig, "line")
    rng = np.random.default_rng(run.seeds[0])
    value = float(rng.normal())
    return Result(metrics={"value": value, "array": np.arange(3)},
                  claims=[Claim("x beats y", "x < y", 1.0, 2.0, holds=True)], figures=[name])


def test_catalogue_has_all_38_papers_with_abstracts_and_citations():
    entries = catalogue()
    assert len(entries) == 38
    assert all(e.abstract and e.field and e.title and e.venue.startswith("ICML 2025") for e in entries.values())
    assert {e.status for e in entries.values()} <= {"implemented", "planned"}
    for e in entries.values():
        if e.arxiv is not None:
            assert re.fullmatch(r"\d{4}\.\d{5}", e.arxiv) and e.url == f"https://arxiv.org/abs/{e.arxiv}"
        assert e.url is None or e.url.startswith("https://")
    assert sum(e.arxiv is None for e in entries.values()) >= 3
    assert entries["rep_codegen"].authors is None and entries["ultratwd"].authors.startswith("Fangchen Yu")
    assert "muZEsBQzlA" in entries["tmvml"].url and "PMLR 267:72837-72852" in entries["ultratwd"].venue


def test_the_literal_paper_arguments_read_without_import_match_the_imported_paper():
    for entry in implemented():
        assert entry.status == "implemented", entry.import_error
        paper = entry.paper
        assert paper.id == entry.id and callable(entry.module.reproduce)
        for name, value in declared(entry.source).items():
            got = getattr(paper, name)
            if name == "known_misses":  # the old tuple form becomes a mapping
                assert set(got) == set(value) and entry.known_misses == dict(got), entry.id
                continue
            assert (tuple(got) if isinstance(got, tuple) else got) == (
                tuple(value) if isinstance(value, (list, tuple)) else value), (entry.id, name)


def test_every_extra_of_pyproject_names_its_modules():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = {m.group(1) for m in re.finditer(r"^([a-z][a-z-]*) = \[", section, flags=re.MULTILINE)}
    assert "bench" in extras
    assert extras - {"all", "dev", "bench"} == set(EXTRA_MODULES)


def test_lookup_unknown_id_names_closest():
    with pytest.raises(KeyError, match="did you mean ultratwd"):
        lookup("ultratw")
    assert "cross_conformal" in closest("cross_conformel")


def test_paper_and_run_validation():
    with pytest.raises(ValueError, match="identifier"):
        Paper(id="bad-id", title="t", module="m")
    with pytest.raises(ValueError, match="scale"):
        Run(scale="huge", seeds=(0,), out=".")
    with pytest.raises(ValueError, match="seeds"):
        Run(scale="quick", seeds=(), out=".")
    with pytest.raises(TypeError, match="Claim"):
        Result(metrics={}, claims=["not a claim"])
    with pytest.raises(ValueError, match="tune_seeds must be disjoint"):
        Run(scale="quick", seeds=(0, 1), out=".", tune_seeds=(1, 5))


def test_tune_seeds_default_to_as_many_seeds_disjoint_from_the_reporting_ones():
    run = Run(scale="quick", seeds=(0, 1, 2), out=".")
    assert len(run.tune_seeds) == 3 and not set(run.tune_seeds) & set(run.seeds)
    assert Run(scale="quick", seeds=(0, 1, 2), out=".").tune_seeds == run.tune_seeds
    assert Run(scale="quick", seeds=(0,), out=".", tune_seeds=(7,)).tune_seeds == (7,)


def test_run_stores_atomically_and_resumes(tmp_path):
    entry = fake_entry(good_reproduce)
    first = run_paper(entry, "smoke", root=tmp_path)
    assert first.status == "done"
    stored = json.loads(result_path(tmp_path, entry.id, "smoke").read_text())
    assert stored["seeds"] == [0, 1] and stored["metrics"]["array"] == [0, 1, 2]
    assert len(stored["tune_seeds"]) == 2 and not set(stored["tune_seeds"]) & {0, 1}
    assert stored["claims"][0]["holds"] is True
    assert (tmp_path / stored["figures"][0]).is_file()
    assert set(stored) >= {"paper", "scale", "seeds", "metrics", "claims", "figures", "seconds", "versions", "git",
                           "command", "machine", "date", "figure_titles"}
    assert stored["command"] == "icml25 reproduce cross_conformal --scale smoke"
    assert stored["machine"]["cores"] >= 1 and stored["machine"]["cpu"]
    assert stored["figure_titles"] == {stored["figures"][0]: "a line"}
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
    with pytest.raises(ValueError, match="n_seeds must be an integer >= 1, got 0"):
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


def test_catalogue_markdown_lists_every_paper():
    table = catalogue_markdown(catalogue().values())
    assert table.count("\n") == 38 + 2


def test_committed_full_results_are_valid_records():
    root = Path(__file__).resolve().parents[2] / "results" / "full"
    for path in sorted(root.glob("*.json")):
        record = load_result(path)
        assert record is not None, f"{path} is not a result record"
        assert record["paper"] == path.stem and record["scale"] == "full"
        assert lookup(path.stem).implemented
        for fig in record["figures"]:  # published with `icml25 publish`: figures beside the record
            assert not fig.startswith("full/") or (root.parent / fig).is_file(), fig


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


@pytest.mark.parametrize(("kwargs", "exc"), [({"repeats": 0}, ValueError), ({"repeats": 2.0}, TypeError),
                                           ({"repeats": True}, TypeError), ({"repeats": 2, "warmup": -1}, ValueError)])
def test_interleaved_seconds_rejects_bad_counts(kwargs, exc):
    with pytest.raises(exc, match=r"(repeats|warmup) must be an integer >= [01], got"):
        interleaved_seconds({"a": lambda: None}, **kwargs)


def test_interleaved_seconds_rejects_no_callables():
    with pytest.raises(ValueError, match="at least one"):
        interleaved_seconds({}, 2)
