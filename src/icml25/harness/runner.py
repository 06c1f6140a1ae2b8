"""Run one paper's reproduction: plan it, execute it (here or in a worker), commit its result.

A run is split in three steps so that every backend (``harness.backends``) shares them:

- :func:`plan` decides, in the driver, whether a paper runs (a :class:`Job`) or not (an
  :class:`Outcome`: stored with the same seeds, planned, or broken);
- :func:`execute` runs the reproduction in a private temporary folder, in whatever process the
  backend chose, and returns a picklable :class:`Payload` (the record and the figure files);
- :func:`commit` writes the figures and then the record into the store, atomically, in the
  driver.  A result therefore lands only once its reproduction has finished, and a crash,
  timeout or Ctrl-C at any moment leaves no partial file behind.

:func:`run_paper` chains the three in this process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shlex
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from icml25.harness.contract import SCALES, Result, Run, to_jsonable
from icml25.harness.registry import Entry, extra_hint
from icml25.harness.store import (
    figure_dir,
    git_revision,
    load_result,
    machine,
    result_path,
    versions,
    write_bytes_atomic,
    write_json_atomic,
)
from icml25.harness.store import warn as default_warn
from icml25.harness.threads import single_thread
from icml25.utils.validation import check_choice, check_scalar

Progress = Callable[[float | None, str], None]


@dataclass
class Outcome:
    """What happened to one paper: ``status`` is ``done``, ``skipped`` (stored) or ``failed``."""

    id: str
    scale: str
    status: str
    record: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class Job:
    """One (paper, scale) to run: all a worker process needs, picklable.

    ``target`` is ``"module:function"``, the reproduce function a worker imports;
    ``num_cpus``/``num_gpus`` are the resources the run asks a Ray cluster for; ``command`` is the
    ``icml25`` command line that reproduces this one result (stored in the record).
    """

    id: str
    scale: str
    seeds: tuple[int, ...]
    target: str | None
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    command: str | None = None


@dataclass
class Payload:
    """What :func:`execute` returns: the record and the files written to ``run.out``, or the error."""

    id: str
    scale: str
    record: dict[str, Any] | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0


def resolve_seeds(entry: Entry, n_seeds: int | None) -> tuple[int, ...]:
    """The paper's default seeds, or ``0..n_seeds-1`` when ``n_seeds`` is given."""
    if n_seeds is None:
        return tuple(entry.paper.default_seeds)
    return tuple(range(check_scalar(n_seeds, "n_seeds", "int", min=1)))


def command_line(pid: str, scale: str, seeds: tuple[int, ...], default_seeds: tuple[int, ...]) -> str:
    """The ``icml25 reproduce`` command that gives this (paper, scale, seeds) result again."""
    args = ["icml25", "reproduce", pid, "--scale", scale]
    if tuple(seeds) != tuple(default_seeds):
        args += ["--seeds", str(len(seeds))]
    return shlex.join(args)


def _target(reproduce: Any) -> str | None:
    """``"module:qualname"`` of a module-level function, ``None`` if a worker could not import it."""
    module, name = getattr(reproduce, "__module__", None), getattr(reproduce, "__qualname__", "")
    if not module or not name or "<" in name or module == "__main__":
        return None
    return f"{module}:{name}"


def plan(
    entry: Entry,
    scale: str = "quick",
    *,
    n_seeds: int | None = None,
    root: Path = Path("results"),
    force: bool = False,
    warn: Callable[[str], None] | None = default_warn,
) -> Job | Outcome:
    """The :class:`Job` that runs ``entry`` at ``scale``, or its :class:`Outcome` if nothing is to run.

    A stored result with the same seeds is ``skipped`` unless ``force``; a corrupt or foreign file
    in its place is reported to ``warn`` and the paper runs again (its result then replaces it).
    """
    check_choice(scale, "scale", SCALES)
    entry.load()
    if entry.missing_extras:
        return Outcome(entry.id, scale, "failed", error=extra_hint(entry.missing_extras))
    if entry.import_error:
        return Outcome(entry.id, scale, "failed", error=f"cannot import reproduction: {entry.import_error}")
    if entry.module is None:
        return Outcome(entry.id, scale, "failed", error="planned: no reproduction implemented yet")
    seeds = resolve_seeds(entry, n_seeds)
    stored = load_result(result_path(root, entry.id, scale), warn=warn)
    if stored is not None and not force and tuple(stored["seeds"]) == seeds:
        return Outcome(entry.id, scale, "skipped", record=stored, seconds=stored["seconds"])
    paper = entry.paper
    full = scale == "full"
    return Job(id=entry.id, scale=scale, seeds=seeds, target=_target(entry.module.reproduce),
               num_cpus=float(getattr(paper, "num_cpus", 1.0)) if full else 1.0,
               num_gpus=float(getattr(paper, "num_gpus", 0.0)) if full else 0.0,
               command=command_line(entry.id, scale, seeds, paper.default_seeds))


class _TitledRun(Run):
    """A :class:`Run` that remembers each saved figure's title, for the report's captions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.titles: dict[str, str] = {}

    def savefig(self, fig: Any, name: str) -> str:
        title = figure_title(fig)
        saved = super().savefig(fig, name)
        if title:
            self.titles[saved] = title
        return saved


def figure_title(fig: Any) -> str:
    """A matplotlib figure's title: its suptitle, else its axes' titles joined by "; "."""
    suptitle = fig.get_suptitle() if hasattr(fig, "get_suptitle") else getattr(fig, "_suptitle", None) or ""
    suptitle = suptitle if isinstance(suptitle, str) else suptitle.get_text()
    if suptitle.strip():
        return " ".join(suptitle.split())
    titles = [" ".join(ax.get_title().split()) for ax in getattr(fig, "axes", [])]
    return "; ".join(t for t in titles if t)


def execute(job: Job, reproduce: Callable[[Run], Result], progress: Progress | None = None) -> Payload:
    """Run ``reproduce`` for ``job`` in a temporary folder; an exception becomes a failed payload.

    Smoke and quick runs use one BLAS/OpenMP/PyTorch thread (``harness.threads``).  Only
    ``KeyboardInterrupt`` and ``SystemExit`` propagate (the temporary folder is removed).
    """
    import matplotlib

    matplotlib.use("Agg")  # the one place the figure backend is set: reproductions only save PNGs
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"icml25-{job.id}-") as tmp:
        out = Path(tmp)
        run = _TitledRun(scale=job.scale, seeds=job.seeds, out=out,
                         progress=progress or (lambda fraction, message="": None))
        limit = single_thread() if job.scale in ("smoke", "quick") else contextlib.nullcontext()
        try:
            with limit:
                result = reproduce(run)
            if not isinstance(result, Result):
                raise TypeError(f"reproduce() must return a Result, got {type(result).__name__}")
            seconds = time.perf_counter() - start
            record = {
                "paper": job.id,
                "scale": job.scale,
                "seeds": list(job.seeds),
                "tune_seeds": list(run.tune_seeds),
                "metrics": to_jsonable(result.metrics),
                "claims": [claim.to_json() for claim in result.claims],
                "figures": [f"{job.id}/{job.scale}/{name}" for name in result.figures],
                "figure_titles": {f"{job.id}/{job.scale}/{name}": run.titles[name]
                                  for name in result.figures if name in run.titles},
                "seconds": round(seconds, 3),
                "versions": versions(),
                "git": git_revision(),
                "command": job.command,
                "machine": machine(),
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            json.dumps(record, allow_nan=False)  # a record that cannot be stored is the paper's failure
            files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
        except Exception:
            return Payload(job.id, job.scale, error=traceback.format_exc(limit=8), seconds=time.perf_counter() - start)
    return Payload(job.id, job.scale, record=record, files=files, seconds=seconds)


def run_job(job: Job, progress: Progress | None = None, started: Callable[[], None] | None = None) -> Payload:
    """Import ``job.target`` and :func:`execute` it: what a worker process or Ray task runs.

    ``started()`` is called once the reproduction is imported and about to run (timeouts count
    from there, not from the worker's start-up)."""
    try:
        if job.target is None:
            raise ImportError(f"the reproduce function of {job.id!r} is not importable by module path")
        module_name, _, qualname = job.target.partition(":")
        reproduce: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            reproduce = getattr(reproduce, part)
    except Exception:
        return Payload(job.id, job.scale, error=traceback.format_exc(limit=4))
    if started is not None:
        started()
    return execute(job, reproduce, progress)


def commit(payload: Payload, root: Path) -> Outcome:
    """Store a finished payload: figures first, then the record, each atomically.

    A failed payload stores nothing and becomes a failed :class:`Outcome`.  A write error raises
    :class:`~icml25.harness.store.StoreError`; what was stored before stays intact.
    """
    if payload.record is None:
        return Outcome(payload.id, payload.scale, "failed", error=payload.error, seconds=payload.seconds)
    folder = figure_dir(root, payload.id, payload.scale)
    for name, data in payload.files.items():
        write_bytes_atomic(folder / name, data)
    write_json_atomic(result_path(root, payload.id, payload.scale), payload.record)
    return Outcome(payload.id, payload.scale, "done", record=payload.record, seconds=payload.seconds)


def run_paper(
    entry: Entry,
    scale: str = "quick",
    *,
    n_seeds: int | None = None,
    root: Path = Path("results"),
    force: bool = False,
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = default_warn,
) -> Outcome:
    """Run (or skip, if stored with the same seeds) one paper's reproduction at ``scale``, here.

    The result is written atomically to ``root/<id>/<scale>.json`` (figures to
    ``root/<id>/<scale>/``) only once the whole reproduction has finished, so an interrupted run
    leaves no partial result behind.  A reproduction that raises gives a ``failed`` outcome; a
    write error raises :class:`~icml25.harness.store.StoreError`.
    """
    planned = plan(entry, scale, n_seeds=n_seeds, root=root, force=force, warn=warn)
    if isinstance(planned, Outcome):
        return planned
    return commit(execute(planned, entry.module.reproduce, progress), root)
