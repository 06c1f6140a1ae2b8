"""The offline resource allocator: pick workers per stage (and the encode batch limit) by simulation
(Singh et al., arXiv 2501.05460, Section 4.1; DistServe's placement search)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from icml25.serving.metrics import summarize
from icml25.serving.request import Request
from icml25.serving.simulator import LatencyModel, SimConfig, SimRequest, simulate


@dataclass(frozen=True)
class Allocation:
    """The chosen deployment and its simulated SLO attainment and mean TTFT on the workload."""

    config: SimConfig
    slo_attainment: float
    mean_ttft: float


def _split(mode: str, budget: int) -> list[tuple[int, int, int]]:
    if mode == "aggregated":
        return [(1, 1, budget)]
    if mode == "pd":
        return [(1, p, budget - p) for p in range(1, budget)]
    return [(e, p, budget - e - p) for e in range(1, budget - 1) for p in range(1, budget - e)]


def allocate(budget: int, workload: Sequence[Request | SimRequest], slo: tuple[float, float],
             latency: LatencyModel, mode: str = "epd", base: SimConfig | None = None,
             batch_grid: Sequence[int] = (4, 8, 16)) -> Allocation:
    """The (n_E, n_P, n_D) with n_E + n_P + n_D = ``budget`` (PD: n_P + n_D; aggregated: ``budget`` workers) and
    the ``max_images_per_batch`` from ``batch_grid`` that maximise simulated SLO attainment of ``workload`` under
    ``slo = (ttft, tpot)``; ties go to the lower mean TTFT.  ``base`` supplies the other limits."""
    min_budget = {"aggregated": 1, "pd": 2, "epd": 3}.get(mode)
    if min_budget is None:
        raise ValueError(f"mode must be one of ('aggregated', 'pd', 'epd'), got {mode!r}")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError(f"budget must be an int, got {type(budget).__name__}")
    if budget < min_budget:
        raise ValueError(f"budget must be >= {min_budget} devices for mode {mode!r} (one per stage), got {budget}")
    if not isinstance(slo, (tuple, list)) or len(slo) != 2 or not all(
            isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 for s in slo):
        raise ValueError(f"slo must be a (ttft, tpot) pair of reals > 0, got {slo!r}")
    if not isinstance(workload, (list, tuple)) or not workload or not all(
            isinstance(r, (Request, SimRequest)) for r in workload):
        raise ValueError("workload must be a non-empty list of Request or SimRequest")
    if not isinstance(latency, LatencyModel):
        raise TypeError(f"latency must be a LatencyModel, got {type(latency).__name__}")
    if base is not None and not isinstance(base, SimConfig):
        raise TypeError(f"base must be a SimConfig or None, got {type(base).__name__}")
    if not isinstance(batch_grid, (list, tuple)):
        raise TypeError(f"batch_grid must be a sequence of ints, got {type(batch_grid).__name__}")
    grid = list(batch_grid)
    if not grid or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in grid):
        raise ValueError(f"batch_grid must be a non-empty sequence of ints >= 1, got {batch_grid!r}")
    base = SimConfig(mode=mode) if base is None else replace(base, mode=mode)
    best: Allocation | None = None
    for (e, p, d), b in itertools.product(_split(mode, budget), grid if mode == "epd" else grid[:1]):
        cfg = replace(base, n_encode=e, n_prefill=p, n_decode=d, max_images_per_batch=b)
        s = summarize(simulate(cfg, workload, latency), *slo)
        cand = Allocation(cfg, s["slo_attainment"], s["mean_ttft"])
        if best is None or (cand.slo_attainment, -cand.mean_ttft) > (best.slo_attainment, -best.mean_ttft):
            best = cand
    return best
