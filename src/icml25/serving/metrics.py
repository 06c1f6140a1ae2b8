"""Serving metrics as ``vllm bench serve`` defines them: TTFT, TPOT (excluding the first token), ITL, end-to-end
latency (mean and percentiles, seconds), request throughput, and goodput under SLOs (requests/s that meet every SLO).
SLO attainment is the fraction of requests meeting both the TTFT and the TPOT SLO (Singh et al., arXiv 2501.05460,
Section 5; DistServe)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from icml25.serving.request import RequestMetrics

PERCENTILES = (50, 90, 99)


def _stats(values: list[float], name: str, out: dict) -> None:
    arr = np.asarray(values, dtype=float)
    out[f"mean_{name}"] = float(arr.mean()) if arr.size else math.nan
    for q in PERCENTILES:
        out[f"p{q}_{name}"] = float(np.percentile(arr, q)) if arr.size else math.nan


def meets_slo(m: RequestMetrics, slo_ttft: float, slo_tpot: float) -> bool:
    """A finished request meets the SLOs when TTFT <= slo_ttft and TPOT <= slo_tpot (one-token requests: TTFT only)."""
    return m.ok and m.ttft <= slo_ttft and (m.tpot is None or m.tpot <= slo_tpot)


def summarize(metrics: Sequence[RequestMetrics], slo_ttft: float = math.inf, slo_tpot: float = math.inf) -> dict:
    """Aggregate per-request metrics: ``completed``, ``failed``, ``duration``, ``request_throughput``,
    ``mean/p50/p90/p99`` of ``ttft``, ``tpot``, ``itl``, ``e2e``, ``slo_attainment`` (over all requests, a failed
    one counts as a miss) and ``goodput`` (requests meeting both SLOs per second of the run)."""
    if not isinstance(metrics, (list, tuple)):
        raise TypeError(f"metrics must be a list of RequestMetrics, got {type(metrics).__name__}")
    metrics = list(metrics)
    if not metrics or not all(isinstance(m, RequestMetrics) for m in metrics):
        raise ValueError("metrics must be a non-empty sequence of RequestMetrics")
    for name, v in (("slo_ttft", slo_ttft), ("slo_tpot", slo_tpot)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"{name} must be a real > 0 (inf: no SLO), got {v!r}")
    ok = [m for m in metrics if m.ok]
    start = min(m.arrival for m in metrics)
    end = max((m.finish for m in ok), default=start)
    duration = max(end - start, 1e-12)
    good = sum(meets_slo(m, slo_ttft, slo_tpot) for m in metrics)
    out = {"completed": len(ok), "failed": len(metrics) - len(ok), "duration": duration,
           "request_throughput": len(ok) / duration,
           "output_throughput": sum(len(m.tokens) for m in ok) / duration}
    _stats([m.ttft for m in ok], "ttft", out)
    _stats([m.tpot for m in ok if m.tpot is not None], "tpot", out)
    _stats([g for m in ok for g in m.itl], "itl", out)
    _stats([m.e2e for m in ok], "e2e", out)
    out["slo_attainment"] = good / len(metrics)
    out["goodput"] = good / duration
    return out
