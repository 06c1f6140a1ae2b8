"""Figures that many reproductions share.

:func:`cost_vs_size` draws the evidence behind a speed claim at full scale: the cost of the method
and of its baseline against the work size on log-log axes, each labelled with its fitted log-log
slope (:func:`icml25.harness.stats.loglog_slope`), and beside it their ratio against the size with
the claim's bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import cycle

import numpy as np
from matplotlib.ticker import NullLocator

from icml25.harness.contract import Run
from icml25.harness.stats import loglog_slope

STYLES = ("-o", "--s", ":^", "-.d", "-v", "--x")

Series = Sequence[float] | Sequence[Sequence[float]] | np.ndarray


def _rows(values: Series, n: int, what: str) -> np.ndarray:
    """``values`` as a 2-D array, one row per seed (a 1-D input is one row), ``n`` columns."""
    arr = np.asarray(values, dtype=float)
    arr = arr[None, :] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"{what} must have one value per size ({n}), or one row of them per seed; got shape "
                         f"{np.shape(values)}")
    return arr


def _tick(size: float) -> str:
    """A size as a tick label: whole numbers below 100,000 in full, the rest to three significant digits."""
    return str(int(size)) if float(size).is_integer() and size < 1e5 else f"{size:.3g}"


def _slope_text(slope: float | Sequence[float]) -> str:
    s = np.atleast_1d(np.asarray(slope, dtype=float))
    return f"slope {s.mean():.2f}" if s.size == 1 else f"slope {s.mean():.2f} ± {s.std(ddof=1):.2f}"


def _errorbars(ax, sizes: np.ndarray, rows: np.ndarray, style: str, label: str, color: str | None = None) -> None:
    """Mean over the rows with their sample standard deviation (no bar for a single row)."""
    sd = rows.std(axis=0, ddof=1) if len(rows) > 1 else None
    ax.errorbar(sizes, rows.mean(axis=0), yerr=sd, fmt=style, color=color, capsize=3 if sd is not None else 0,
                label=label)


def cost_vs_size(
    run: Run,
    name: str,
    sizes: Sequence[float],
    costs: Mapping[str, Series],
    *,
    xlabel: str,
    title: str,
    ylabel: str = "thread CPU time [s]",
    ratios: Mapping[str, Series] | None = None,
    bounds: Mapping[str, float] | None = None,
    ratio_ylabel: str = "time ratio",
    ratio_title: str = "relative cost",
    ratio_log: bool = False,
    slopes: Mapping[str, float | Sequence[float]] | None = None,
) -> str:
    """Save the cost-against-size figure ``<name>.png`` of ``run``; return its file name.

    Left panel: each curve of ``costs`` (label -> one value per size, or one row of them per seed)
    against ``sizes`` on log-log axes, mean ± sd over seeds, its legend giving the fitted log-log
    slope (per seed, then mean ± sd). ``slopes`` (label -> slope, or one per seed) replaces the fit
    where the reproduction fitted it itself, e.g. on part of the range. Right panel, drawn when
    ``ratios`` is given: each ratio against the size (log x; log y with ``ratio_log``; the y range fits
    the ratios and the bounds, so a ratio near its bound stays readable), with each of
    ``bounds`` (legend text -> value) as a black line, dashed, dotted, then dash-dotted.
    """
    import matplotlib.pyplot as plt

    x = np.asarray(sizes, dtype=float)
    fig, axes = plt.subplots(1, 2 if ratios else 1, figsize=(10.5 if ratios else 5.5, 3.9), squeeze=False)
    left = axes[0, 0]
    for (label, values), style in zip(costs.items(), cycle(STYLES)):
        rows = _rows(values, len(x), f"costs[{label!r}]")
        slope = slopes[label] if slopes and label in slopes else [loglog_slope(x, r) for r in rows]
        _errorbars(left, x, rows, style, f"{label} ({_slope_text(slope)})")
    left.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    if ratios:
        right = axes[0, 1]
        for (label, values), style, color in zip(ratios.items(), cycle(STYLES), cycle(("C2", "C4", "C5", "C6"))):
            _errorbars(right, x, _rows(values, len(x), f"ratios[{label!r}]"), style, label, color)
        for (label, value), ls in zip((bounds or {}).items(), cycle(("--", ":", "-."))):
            right.axhline(value, color="k", ls=ls, lw=0.8, label=label)
        right.set(xscale="log", yscale="log" if ratio_log else "linear", xlabel=xlabel, ylabel=ratio_ylabel,
                  title=ratio_title)
    for ax in axes.ravel():
        ax.set_xticks(x, [_tick(v) for v in x])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.legend(fontsize=7)
    fig.tight_layout()
    return run.savefig(fig, name)
