"""The local backends: in this process (``--jobs 1``) and in worker processes (``--jobs N``)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from icml25 import cli
from icml25.harness.backends import Hooks, run_many
from icml25.harness.contract import Paper
from icml25.harness.runner import Job, plan, run_paper
from icml25.harness.store import result_path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # spawned workers inherit sys.path and import the fakes by name
    sys.path.insert(0, str(HERE))
fakes = importlib.import_module("harness_fakes")


def without_pid(record):
    return {k: v for k, v in record["metrics"].items() if k != "pid"}


def use_fakes(monkeypatch, entries):
    by_id = {e.id: e for e in entries}
    monkeypatch.setattr(cli, "lookup", lambda pid: by_id[pid])


def test_in_process_backend_stores_like_run_paper_and_calls_hooks(tmp_path):
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.boom, "fb"), fakes.entry(fakes.good, "fc", (3,))]
    events = []
    hooks = Hooks(start=lambda pid: events.append(("start", pid)),
                  progress=lambda pid, fraction, message: events.append(("progress", pid, fraction)),
                  done=lambda outcome: events.append(("done", outcome.id, outcome.status)))
    outcomes = run_many(entries, "smoke", root=tmp_path / "many", hooks=hooks)
    assert [(o.id, o.status) for o in outcomes] == [("fa", "done"), ("fb", "failed"), ("fc", "done")]
    assert "boom" in outcomes[1].error
    assert events[:4] == [("start", "fa"), ("progress", "fa", 1.0), ("done", "fa", "done"), ("start", "fb")]
    assert outcomes[0].record["metrics"]["pid"] == os.getpid()  # --jobs 1 runs here, as before
    single = run_paper(entries[0], "smoke", root=tmp_path / "one")
    assert without_pid(single.record) == without_pid(outcomes[0].record)
    for o in (outcomes[0], outcomes[2]):
        assert (tmp_path / "many" / o.record["figures"][0]).is_file()
    again = run_many(entries, "smoke", root=tmp_path / "many")
    assert [o.status for o in again] == ["skipped", "failed", "skipped"]


def test_worker_processes_give_the_same_results_in_order(tmp_path):
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.boom, "fb"), fakes.entry(fakes.good, "fc", (3,))]
    here = run_many(entries, "smoke", root=tmp_path / "here")
    workers = run_many(entries, "smoke", root=tmp_path / "workers", jobs=2)
    assert [(o.id, o.status) for o in workers] == [("fa", "done"), ("fb", "failed"), ("fc", "done")]
    assert "boom: the reproduction raised" in workers[1].error
    for a, b in zip(here, workers, strict=True):
        if a.record is not None:
            assert without_pid(a.record) == without_pid(b.record) and a.record["claims"] == b.record["claims"]
            assert b.record["metrics"]["pid"] != os.getpid()
            stored = json.loads(result_path(tmp_path / "workers", b.id, "smoke").read_text())
            assert stored == b.record
            assert (tmp_path / "workers" / stored["figures"][0]).read_bytes() == \
                (tmp_path / "here" / a.record["figures"][0]).read_bytes()
    assert not result_path(tmp_path / "workers", "fb", "smoke").exists()


def test_reproduce_function_a_worker_cannot_import_is_a_clear_failure(tmp_path):
    entries = [fakes.entry(lambda run: fakes.good(run), "fl"), fakes.entry(fakes.good, "fa")]
    outcomes = run_many(entries, "smoke", root=tmp_path, jobs=2)
    assert outcomes[0].status == "failed" and "not importable by module path" in outcomes[0].error
    assert outcomes[1].status == "done"


@pytest.mark.parametrize("kwargs, match", [({"jobs": 0}, "jobs"), ({"backend": "dask"}, "backend"),
                                           ({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries")])
def test_run_many_rejects_bad_settings(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        run_many([fakes.entry(fakes.good, "fa")], "smoke", root=tmp_path, **kwargs)


def test_cli_jobs_runs_every_paper_and_reports_failures(tmp_path, monkeypatch, capsys):
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.boom, "fb"), fakes.entry(fakes.good, "fc")]
    use_fakes(monkeypatch, entries)
    code = cli.main(["reproduce", "fa", "fb", "fc", "--scale", "smoke", "--jobs", "2", "--out", str(tmp_path)])
    assert code == 1
    out = capsys.readouterr().out
    assert "fb failed" in out and "boom" in out
    assert result_path(tmp_path, "fa", "smoke").is_file() and result_path(tmp_path, "fc", "smoke").is_file()


@pytest.mark.parametrize("args, message", [
    (["--backend", "ray", "--jobs", "2"], "--jobs applies to the local backend"),
    (["--address", "auto"], "--address applies to the ray backend"),
    (["--timeout", "0"], "argument --timeout: must be a real number in (0, inf), got 0.0"),
    (["--timeout", "soon"], "argument --timeout: must be a real number in (0, inf), got 'soon'"),
    (["--jobs", "0"], "argument --jobs: must be an integer >= 1, got 0"),
    (["--backend", "dask"], "invalid choice: 'dask'"),
])
def test_cli_backend_options_bad_usage(args, message, capsys):
    assert cli.main(["reproduce", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_ray_backend_without_ray_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    assert cli.main(["reproduce", "--backend", "ray", "--scale", "smoke"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["icml25: error: the ray backend needs Ray: pip install -e '.[ray]' (from the checkout)"]


def test_full_scale_jobs_ask_for_the_papers_resources(tmp_path):
    entry = fakes.entry(fakes.good, "fa")
    entry.module.PAPER = replace(entry.paper, num_cpus=4, num_gpus=1)
    full, quick = plan(entry, "full", root=tmp_path), plan(entry, "quick", root=tmp_path)
    assert isinstance(full, Job) and (full.num_cpus, full.num_gpus) == (4.0, 1.0)
    assert (quick.num_cpus, quick.num_gpus) == (1.0, 0.0)
    assert full.target == "harness_fakes:good"
    with pytest.raises(ValueError, match="num_cpus"):
        Paper(id="x", title="t", module="m", num_cpus=0)
