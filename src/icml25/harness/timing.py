"""Timing for speed claims: medians of repeats, measured in the same process as the baseline."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

from icml25.utils.validation import check_callable, check_scalar


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn()``."""
    repeats = check_scalar(repeats, "repeats", "int", min=1)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def interleaved_seconds(fns: Mapping[str, Callable[[], object]], repeats: int, warmup: int = 2,
                        clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Seconds taken by each ``fns[name]()``, ``repeats`` times, the callables taking turns so that load
    drifts hit all of them alike; the turn order is reversed every other round (A B, B A, ...) so that no
    callable always runs right after the same other one. The first ``warmup`` rounds (lazy initialisation,
    caches) are not kept. ``clock`` is wall-clock time by default; ``time.thread_time`` counts only the
    calling thread's CPU time, which other processes on a busy machine barely disturb (for single-threaded
    work, e.g. under ``icml25.harness.threads.single_thread()``)."""
    repeats = check_scalar(repeats, "repeats", "int", min=1)
    warmup = check_scalar(warmup, "warmup", "int", min=0)
    if not fns:
        raise ValueError("interleaved_seconds needs at least one callable")
    check_callable(clock, "clock")
    out: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(warmup + repeats):
        for name, fn in order if r % 2 == 0 else order[::-1]:
            start = clock()
            fn()
            if r >= warmup:
                out[name].append(clock() - start)
    return out
