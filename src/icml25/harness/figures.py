"""Figures that many reproductions share.

:func:`cost_vs_size` draws the evidence behind a speed claim at full scale: the cost of the method
and of its baseline against the work size on log-log axes, each labelled with its fitted log-log
slope (:func:`icml25.harness.stats.loglog_slope`), and beside it their ratio against the size with
the claim's bound. Figures with more panels build them from :func:`cost_panel` and
:func:`ratio_panel`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import cycle
from typing import Any

import numpy as np
from matplotlib.container import Container
from matplotlib.ticker import NullLocator

from icml25.harness.contract import Run
from icml25.harness.stats import loglog_slope
from icml25.utils.validation import check_choice

STYLES = ("-o", "--s", ":^", "-.d", "-v", "--x")
RATIO_COLORS = ("C2", "C4", "C5", "C6")
MAX_SIZE_TICKS = 8
CENTERS = ("mean", "median")

Series = Sequence[float] | Sequence[Sequence[float]] | np.ndarray
Sizes = Sequence[float] | Mapping[str, Sequence[float]]


def _rows(values: Series, n: int, what: str) -> np.ndarray:
    """``values`` as a 2-D array, one row per seed (a 1-D input is one row), ``n`` columns."""
    arr = np.asarray(values, dtype=float)
    arr = arr[None, :] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[1] != n:
        raise ValueError(f"{what} must have one value per size ({n}), or one row of them per seed; got shape "
                         f"{np.shape(values)}")
    return arr


def _sizes_of(sizes: Sizes, label: str) -> np.ndarray:
    if isinstance(sizes, Mapping):
        if label not in sizes:
            raise ValueError(f"sizes has no grid for the curve {label!r}; it has {sorted(sizes)}")
        return np.asarray(sizes[label], dtype=float)
    return np.asarray(sizes, dtype=float)


def _tick(size: float) -> str:
    """A size as a short tick label: whole numbers below 100,000 in full, larger ones to three significant digits
    with an SI suffix (k, M, G, T), anything else with ``%g``."""
    if float(size).is_integer() and size < 1e5:
        return str(int(size))
    if size >= 1e5:
        power, suffix = next((p, x) for p, x in ((12, "T"), (9, "G"), (6, "M"), (3, "k")) if size >= 10**p)
        return f"{size / 10**power:.3g}{suffix}"
    return f"{size:g}"


def _legend(ax: Any) -> None:
    """The legend with the curves first (in drawing order), then references and bounds."""
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(handles)), key=lambda i: not isinstance(handles[i], Container))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7)


def _size_axis(ax: Any, sizes: np.ndarray) -> None:
    """Log size axis with a labelled tick at each size (at most ``MAX_SIZE_TICKS`` of them; else decades)."""
    ax.set_xscale("log")
    ticks = np.unique(sizes)
    if len(ticks) <= MAX_SIZE_TICKS:
        ax.set_xticks(ticks, [_tick(v) for v in ticks])
        ax.xaxis.set_minor_locator(NullLocator())


def _slope_text(slope: float | Sequence[float], center: str) -> str:
    s = np.atleast_1d(np.asarray(slope, dtype=float))
    if s.size == 1:
        return f"slope {s[0]:.2f}"
    if center == "median":
        return f"slope {np.median(s):.2f}, median of {s.size}"
    return f"slope {s.mean():.2f} ± {s.std(ddof=1):.2f}"


def _draw_rows(ax: Any, sizes: np.ndarray, rows: np.ndarray, style: str, label: str, color: str | None,
               center: str) -> np.ndarray:
    """Draw the rows (one per seed) and return the drawn centre line: the mean with the sample standard deviation
    as error bars, or the median with each row's points drawn faintly. A single row is drawn as it is."""
    if center == "median" and len(rows) > 1:
        line = np.median(rows, axis=0)
        (drawn,) = ax.plot(sizes, line, style, color=color, label=label)
        ax.plot(np.tile(sizes, len(rows)), rows.ravel(), ls="none", marker=drawn.get_marker(), color=drawn.get_color(),
                alpha=0.3, markersize=4)
        return line
    line = rows.mean(axis=0)
    sd = rows.std(axis=0, ddof=1) if len(rows) > 1 else None
    ax.errorbar(sizes, line, yerr=sd, fmt=style, color=color, capsize=3 if sd is not None else 0, label=label)
    return line


def cost_panel(
    ax: Any,
    sizes: Sizes,
    costs: Mapping[str, Series],
    *,
    xlabel: str,
    title: str = "",
    ylabel: str = "thread CPU time [s]",
    slopes: Mapping[str, float | Sequence[float]] | None = None,
    colors: Mapping[str, str] | None = None,
    styles: Mapping[str, str] | None = None,
    references: Mapping[str, float] | None = None,
    center: str = "mean",
) -> None:
    """Draw each curve of ``costs`` against its sizes into ``ax`` on log-log axes.

    ``costs`` maps a label to one value per size, or one row of them per seed (drawn as mean ± sd, or
    with ``center="median"`` as the median over seeds with each seed's points faint, for a claim
    stated on medians); ``sizes`` is one grid for all curves or a grid per label. The legend gives
    each curve's fitted log-log slope (per seed, then mean ± sd, or their median); ``slopes`` (label
    -> slope, or one per seed) replaces the fit where the reproduction fitted it itself, e.g. on part
    of the range. ``references`` (legend text -> exponent) adds a thin grey line of that slope
    through the first curve's first point, the paper's complexity to compare with.
    """
    check_choice(center, "center", CENTERS)
    plotted = []
    for (label, values), style in zip(costs.items(), cycle(STYLES)):
        x = _sizes_of(sizes, label)
        rows = _rows(values, len(x), f"costs[{label!r}]")
        slope = slopes[label] if slopes and label in slopes else [loglog_slope(x, r) for r in rows]
        plotted.append((x, _draw_rows(ax, x, rows, (styles or {}).get(label, style),
                                      f"{label} ({_slope_text(slope, center)})", (colors or {}).get(label), center)))
    for (label, exponent), ls in zip((references or {}).items(), cycle((":", "--", "-."))):
        x0, y0 = plotted[0][0], plotted[0][1]
        ax.plot(x0, y0[0] * (x0 / x0[0]) ** exponent, color="grey", ls=ls, lw=0.8, label=label)
    ax.set(yscale="log", xlabel=xlabel, ylabel=ylabel, title=title)
    _size_axis(ax, np.concatenate([x for x, _ in plotted]))
    _legend(ax)


def ratio_panel(
    ax: Any,
    sizes: Sizes,
    ratios: Mapping[str, Series],
    *,
    xlabel: str,
    title: str = "relative cost",
    ylabel: str = "time ratio",
    bounds: Mapping[str, float] | None = None,
    log: bool = False,
    colors: Mapping[str, str] | None = None,
    center: str = "mean",
) -> None:
    """Draw each ratio of ``ratios`` (as in :func:`cost_panel`, with its ``center``) against the size into
    ``ax``, with each of ``bounds`` (legend text -> value) as a black line, dashed, dotted, then dash-dotted.

    The size axis is logarithmic, the ratio axis too with ``log``; its range fits the ratios and the
    bounds, so a ratio near its bound stays readable.
    """
    check_choice(center, "center", CENTERS)
    xs = []
    for (label, values), style, color in zip(ratios.items(), cycle(STYLES), cycle(RATIO_COLORS)):
        x = _sizes_of(sizes, label)
        _draw_rows(ax, x, _rows(values, len(x), f"ratios[{label!r}]"), style, label, (colors or {}).get(label, color),
                   center)
        xs.append(x)
    for (label, value), ls in zip((bounds or {}).items(), cycle(("--", ":", "-."))):
        ax.axhline(value, color="k", ls=ls, lw=0.8, label=label)
    ax.set(yscale="log" if log else "linear", xlabel=xlabel, ylabel=ylabel, title=title)
    _size_axis(ax, np.concatenate(xs))
    _legend(ax)


def cost_vs_size(
    run: Run,
    name: str,
    sizes: Sizes,
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
    references: Mapping[str, float] | None = None,
    center: str = "mean",
) -> str:
    """Save the cost-against-size figure ``<name>.png`` of ``run``; return its file name.

    Left panel: :func:`cost_panel` of ``costs`` (with ``slopes``, ``references`` and ``center``). Right panel,
    drawn when ``ratios`` is given: :func:`ratio_panel` of ``ratios`` with ``bounds`` (log ratio axis
    with ``ratio_log``).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if ratios else 1, figsize=(10.5 if ratios else 5.5, 3.9), squeeze=False)
    cost_panel(axes[0, 0], sizes, costs, xlabel=xlabel, title=title, ylabel=ylabel, slopes=slopes,
               references=references, center=center)
    if ratios:
        ratio_panel(axes[0, 1], sizes, ratios, xlabel=xlabel, title=ratio_title, ylabel=ratio_ylabel, bounds=bounds,
                    log=ratio_log, center=center)
    fig.tight_layout()
    return run.savefig(fig, name)
