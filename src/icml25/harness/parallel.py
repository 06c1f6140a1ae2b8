"""Spread a reproduction's independent, seeded jobs over a few single-threaded processes.

A reproduction whose fits do not depend on each other (one per seed, model or depth) can use both
cores of the quick-scale machine: every job runs in its own spawned process with one BLAS and one
PyTorch thread, so the numbers are those of running the jobs one after another in order.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from icml25.harness.threads import single_thread
from icml25.utils.validation import check_scalar


def _single_threaded(fn: Callable[..., Any], args: tuple) -> Any:
    with single_thread():
        return fn(*args)


def run_jobs(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int,
             progress: Callable[[float | None, str], None] | None = None,
             describe: Callable[[tuple], str] = str) -> list[Any]:
    """``[fn(*job) for job in jobs]``, in ``workers`` spawned single-threaded processes when ``workers > 1``.

    ``fn`` must be a module-level function (it is pickled). Results come back in the order of ``jobs``;
    ``progress(fraction, describe(job))`` is called as each job finishes. With ``workers == 1`` (or one
    job) the jobs run here, in order, under the caller's thread settings.
    """
    workers = check_scalar(workers, "workers", "int", min=1)
    report = progress or (lambda fraction, message: None)
    if workers == 1 or len(jobs) <= 1:
        out = []
        for i, job in enumerate(jobs):
            out.append(fn(*job))
            report((i + 1) / len(jobs), describe(job))
        return out
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_single_threaded, fn, tuple(job)): i for i, job in enumerate(jobs)}
        results: list[Any] = [None] * len(jobs)
        for done, future in enumerate(as_completed(futures), start=1):
            i = futures[future]
            results[i] = future.result()
            report(done / len(jobs), describe(jobs[i]))
    return results
