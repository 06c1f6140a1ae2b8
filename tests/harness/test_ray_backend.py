"""The Ray backend on a small local Ray instance (2 CPUs), started once for this module.

A worker killed mid-run is retried; a hang is cancelled at the timeout; a reproduction that
raises fails alone; and every registered paper gives, at smoke scale, the same claims through
Ray as through the local backend.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import pytest

from icml25.harness.backends import Hooks, run_many
from icml25.harness.registry import implemented
from icml25.harness.store import load_result, result_path

ray = pytest.importorskip("ray")

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
fakes = importlib.import_module("harness_fakes")
# Metric keys as in tests/reproductions, and a live process's resident memory ("rss"), which varies like time.
TIMING_WORDS = ("seconds", "time", "speedup", "ratio_wall", "rss")
# Claims about wall-clock time (speed-ups, costs, overheads, serving latencies such as TTFT and TPOT) differ
# from run to run, and so do peak memories under a live serving trace (the KV-cache peak depends on how many
# requests overlap in time): not compared.
TIMING_CLAIM = re.compile(r"time|faster|slower|speed|cost|overhead|wall|seconds|latency|throughput|TTFT|TPOT"
                          r"|peak memory"
                          r"|within [\d.]+ ?[x×] of|\d ?s\b", re.I)


@pytest.fixture(scope="module")
def ray_instance(tmp_path_factory):
    markers = tmp_path_factory.mktemp("markers")
    pythonpath = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": pythonpath, fakes.MARKER_ENV: str(markers)}})
    yield markers
    ray.shutdown()


def test_ray_retries_a_killed_worker_and_isolates_failures(ray_instance, tmp_path):
    entries = [fakes.entry(fakes.crash_once, "fk"), fakes.entry(fakes.boom, "fb"), fakes.entry(fakes.good, "fa")]
    started = []
    outcomes = run_many(entries, "smoke", root=tmp_path, backend="ray", max_retries=2,
                        hooks=Hooks(start=started.append))
    assert (ray_instance / "crash_once.attempted").is_file()  # the first attempt did die
    assert [(o.id, o.status) for o in outcomes] == [("fk", "done"), ("fb", "failed"), ("fa", "done")]
    assert "RuntimeError: boom" in outcomes[1].error
    retried = outcomes[0].record
    assert retried["metrics"]["pid"] != int((ray_instance / "crash_once.attempted").read_text())
    assert load_result(result_path(tmp_path, "fk", "smoke")) == retried
    assert (tmp_path / retried["figures"][0]).is_file()
    assert sorted(started) == ["fa", "fb", "fk"]


def test_ray_cancels_a_hang_at_the_timeout(ray_instance, tmp_path):
    entries = [fakes.entry(fakes.hang, "fh"), fakes.entry(fakes.good, "fa")]
    outcomes = run_many(entries, "smoke", root=tmp_path, backend="ray", timeout=2)
    assert outcomes[0].status == "failed" and outcomes[0].error.startswith("timed out after 2 s")
    assert outcomes[1].status == "done" and not result_path(tmp_path, "fh", "smoke").exists()


def comparable(claim):
    """A claim without wall-clock-dependent parts: ``None`` for speed claims, timing keys dropped."""
    if TIMING_CLAIM.search(f"{claim['text']} {claim.get('criterion')} {claim['paper']}"):
        return None

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not any(w in k for w in TIMING_WORDS)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return {"text": claim["text"], "holds": claim["holds"], "measured": strip(claim["measured"]),
            "baseline": strip(claim["baseline"])}


def test_every_paper_gives_the_same_smoke_claims_on_ray_and_locally(ray_instance, tmp_path):
    """The acceptance check of the Ray backend: run once, over every registered paper."""
    entries = [e for e in implemented() if e.status == "implemented"]
    local = run_many(entries, "smoke", root=tmp_path / "local")
    on_ray = run_many(entries, "smoke", root=tmp_path / "ray", backend="ray")
    for a, b in zip(local, on_ray, strict=True):
        assert (a.id, a.status, b.status) == (b.id, "done", "done"), b.error
        assert [c["text"] for c in a.record["claims"]] == [c["text"] for c in b.record["claims"]]
        differ = [(x, y) for x, y in zip(map(comparable, a.record["claims"]), map(comparable, b.record["claims"]),
                                         strict=True) if x != y]
        assert differ == [], f"{a.id}: claims differ between the local backend and Ray"
        assert load_result(result_path(tmp_path / "ray", b.id, "smoke")) == b.record
