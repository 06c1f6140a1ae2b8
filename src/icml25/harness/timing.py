"""Timing for speed claims: medians of repeats, measured in the same process as the baseline."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping


def _check_count(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn()``."""
    _check_count("repeats", repeats, 1)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def interleaved_seconds(fns: Mapping[str, Callable[[], object]], repeats: int,
                        warmup: int = 2) -> dict[str, list[float]]:
    """Wall-clock seconds of each ``fns[name]()``, ``repeats`` times, the callables taking turns so that load
    drifts hit all of them alike; the first ``warmup`` rounds (lazy initialisation, caches) are not kept."""
    _check_count("repeats", repeats, 1)
    _check_count("warmup", warmup, 0)
    if not fns:
        raise ValueError("interleaved_seconds needs at least one callable")
    out: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(warmup + repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            if r >= warmup:
                out[name].append(time.perf_counter() - start)
    return out
