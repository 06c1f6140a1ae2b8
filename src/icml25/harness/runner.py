"""Run reproductions one paper at a time; one that raises is reported, the others go on."""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icml25.harness.contract import SCALES, Result, Run, to_jsonable
from icml25.harness.registry import Entry
from icml25.harness.store import (
    figure_dir,
    git_revision,
    load_result,
    result_path,
    versions,
    write_json_atomic,
)
from icml25.harness.threads import single_thread


@dataclass
class Outcome:
    """What happened to one paper: ``status`` is ``done``, ``skipped`` (stored) or ``failed``."""

    id: str
    scale: str
    status: str
    record: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0


def resolve_seeds(entry: Entry, n_seeds: int | None) -> tuple[int, ...]:
    """The paper's default seeds, or ``0..n_seeds-1`` when ``n_seeds`` is given."""
    if n_seeds is None:
        return tuple(entry.paper.default_seeds)
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"the number of seeds must be a positive integer, got {n_seeds!r}")
    return tuple(range(n_seeds))


def run_paper(
    entry: Entry,
    scale: str = "quick",
    *,
    n_seeds: int | None = None,
    root: Path = Path("results"),
    force: bool = False,
    progress: Callable[[float | None, str], None] | None = None,
) -> Outcome:
    """Run (or skip, if stored with the same seeds) one paper's reproduction at ``scale``.

    Smoke and quick runs use one BLAS/OpenMP/PyTorch thread (``harness.threads``).  The result is
    written atomically to ``root/<id>/<scale>.json`` only once the whole
    reproduction has finished, so an interrupted run leaves no partial result behind.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if entry.import_error:
        return Outcome(entry.id, scale, "failed", error=f"cannot import reproduction: {entry.import_error}")
    if entry.module is None:
        return Outcome(entry.id, scale, "failed", error="planned: no reproduction implemented yet")
    seeds = resolve_seeds(entry, n_seeds)
    path = result_path(root, entry.id, scale)
    stored = load_result(path)
    if stored is not None and not force and tuple(stored["seeds"]) == seeds:
        return Outcome(entry.id, scale, "skipped", record=stored, seconds=stored["seconds"])
    run = Run(scale=scale, seeds=seeds, out=figure_dir(root, entry.id, scale),
              progress=progress or (lambda fraction, message="": None))
    limit = single_thread() if scale in ("smoke", "quick") else contextlib.nullcontext()
    start = time.perf_counter()
    try:
        with limit:
            result = entry.module.reproduce(run)
        if not isinstance(result, Result):
            raise TypeError(f"reproduce() must return a Result, got {type(result).__name__}")
    except Exception:
        return Outcome(entry.id, scale, "failed", error=traceback.format_exc(limit=8),
                       seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    record = {
        "paper": entry.id,
        "scale": scale,
        "seeds": list(seeds),
        "metrics": to_jsonable(result.metrics),
        "claims": [claim.to_json() for claim in result.claims],
        "figures": [f"{entry.id}/{scale}/{name}" for name in result.figures],
        "seconds": round(seconds, 3),
        "versions": versions(),
        "git": git_revision(),
    }
    write_json_atomic(path, record)
    return Outcome(entry.id, scale, "done", record=record, seconds=seconds)

