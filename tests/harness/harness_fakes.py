"""Fake reproductions for the backend and fault tests, importable by worker processes and Ray tasks.

The tests put this folder on ``sys.path`` (spawned workers inherit it) and on ``PYTHONPATH``
(the Ray workers and the CLI subprocess).  Each fake is a module-level function, so a worker imports it by
``harness_fakes:<name>``; :func:`entry` wraps one into a registry entry.
"""

from __future__ import annotations

import os
import signal
import time
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.registry import Entry

HERE = Path(__file__).resolve().parent
MARKER_ENV = "ICML25_FAKE_MARKER_DIR"


def entry(reproduce, pid: str, seeds=(0, 1)) -> Entry:
    """A registry entry whose reproduction is ``reproduce`` (results under ``<root>/<pid>/``)."""
    module = types.SimpleNamespace(
        PAPER=Paper(id=pid, title=f"fake {pid}", module="m", default_seeds=seeds),
        reproduce=reproduce,
    )
    return Entry(id=pid, title=f"fake {pid}", short_title=pid, field="test",
                 abstract="a fake paper", module=module)


def good(run: Run) -> Result:
    """Finishes at once: one figure, one claim that holds."""
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, sum(run.seeds)])
    name = run.savefig(fig, "line")
    run.progress(1.0, "done")
    return Result(metrics={"seeds_sum": sum(run.seeds), "pid": os.getpid()},
                  claims=[Claim("fake claim", "1 < 2", 1.0, 2.0, holds=True)], figures=[name])


def slow(run: Run) -> Result:
    """Like :func:`good`, after a second's work (to time parallel runs)."""
    time.sleep(1.0)
    return good(run)


def boom(run: Run) -> Result:
    raise RuntimeError("boom: the reproduction raised")


def hang(run: Run) -> Result:
    """Never finishes (writes its pid to ``<marker dir>/hang.pid`` so a test can check it is gone)."""
    marker = os.environ.get(MARKER_ENV)
    if marker:
        Path(marker, "hang.pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.1)


def _sleep_forever(index: int) -> None:
    marker = os.environ.get(MARKER_ENV)
    if marker:
        Path(marker, f"pool{index}.pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.1)


def hang_in_pool(run: Run) -> Result:
    """Never finishes, its work in two ``run_jobs`` pool processes (each writes ``<marker dir>/pool<i>.pid``)."""
    from icml25.harness.parallel import run_jobs

    run_jobs(_sleep_forever, [(0,), (1,)], workers=2)
    raise AssertionError("unreachable")


def kill_self(run: Run) -> Result:
    """The worker process dies by SIGKILL mid-run, as under the out-of-memory killer."""
    run.progress(0.5, "about to die")
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)
    raise AssertionError("unreachable")


def crash_once(run: Run) -> Result:
    """Kills its own process on the first attempt (a marker file remembers it), succeeds on the retry."""
    marker = Path(os.environ[MARKER_ENV], "crash_once.attempted")
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return good(run)
