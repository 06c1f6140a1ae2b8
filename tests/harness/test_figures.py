from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from icml25.harness import Run  # noqa: E402
from icml25.harness.figures import cost_panel, cost_vs_size, ratio_panel  # noqa: E402

SIZES = [10, 20, 40, 80]


def _draw(tmp_path, monkeypatch, **kwargs):
    """Draw with ``plt.close`` disabled, so the test can read the saved figure's axes."""
    monkeypatch.setattr(plt, "close", lambda *a, **k: None)
    run = Run(scale="full", seeds=(0, 1), out=tmp_path)
    name = cost_vs_size(run, "cost", SIZES, xlabel="n", title="cost against n", **kwargs)
    return name, plt.gcf()


def test_legend_gives_the_fitted_slope_per_seed_and_the_ratio_panel_its_bound(tmp_path, monkeypatch):
    linear = [[2e-3 * n for n in SIZES], [3e-3 * n for n in SIZES]]
    quadratic = [[1e-4 * n**2 for n in SIZES], [1e-4 * n**2 for n in SIZES]]
    name, fig = _draw(tmp_path, monkeypatch, costs={"ours": linear, "baseline": quadratic},
                      ratios={"baseline / ours": np.divide(quadratic, linear)},
                      bounds={"5x (the claim)": 5.0})
    assert name == "cost.png" and (tmp_path / name).is_file()
    left, right = fig.axes
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert labels == ["ours (slope 1.00 ± 0.00)", "baseline (slope 2.00 ± 0.00)"]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["baseline / ours", "5x (the claim)"]
    assert left.get_xscale() == left.get_yscale() == right.get_xscale() == "log"


def test_one_row_and_a_given_slope(tmp_path, monkeypatch):
    _, fig = _draw(tmp_path, monkeypatch, costs={"ours": [1.0, 2.0, 4.0, 8.0]}, slopes={"ours": 0.9})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours (slope 0.90)"]


@pytest.mark.parametrize("values", [[1.0, 2.0], [[1.0, 2.0, 3.0, 4.0, 5.0]], [[[1.0] * 4]]])
def test_a_series_of_the_wrong_length_is_refused(tmp_path, values):
    with pytest.raises(ValueError, match=r"costs\['ours'\] must have one value per size \(4\)"):
        cost_vs_size(Run(scale="full", seeds=(0,), out=tmp_path), "cost", SIZES, {"ours": values}, xlabel="n",
                     title="t")
    assert not list(tmp_path.iterdir())


def test_size_ticks_are_the_sizes_themselves(tmp_path, monkeypatch):
    monkeypatch.setattr(plt, "close", lambda *a, **k: None)
    cost_vs_size(Run(scale="full", seeds=(0,), out=tmp_path), "cost", [640, 40960, 2457600], {"ours": [1.0, 2.0, 3.0]},
                 xlabel="n", title="t")
    (ax,) = plt.gcf().axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["640", "40960", "2.46M"]
    assert ax.xaxis.get_minorticklocs().size == 0


def test_cost_panel_takes_a_grid_per_curve_and_draws_reference_slopes():
    fig, ax = plt.subplots()
    cost_panel(ax, {"lazy": [1e3, 1e6, 1e9, 1e12], "dense": [1e4, 1e5, 1e6]},
               {"lazy": [1.0, 1.0, 1.0, 1.0], "dense": [1e-3, 1e-2, 1e-1]}, xlabel="d", references={"O(d)": 1.0})
    lines = {t.get_text() for t in ax.get_legend().get_texts()}
    assert lines == {"lazy (slope 0.00)", "dense (slope 1.00)", "O(d)"}
    ref = next(line for line in ax.get_lines() if line.get_label() == "O(d)")
    assert np.allclose(ref.get_ydata(), [1.0, 1e3, 1e6, 1e9])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1000", "10000", "100k", "1M", "1G", "1T"]
    plt.close(fig)


def test_a_grid_missing_for_a_curve_is_refused():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="sizes has no grid for the curve 'b'"):
        cost_panel(ax, {"a": [1, 2]}, {"a": [1.0, 2.0], "b": [1.0, 2.0]}, xlabel="n")
    plt.close(fig)


def test_ratio_panel_keeps_the_bound_in_view_and_many_sizes_fall_back_to_decades():
    fig, ax = plt.subplots()
    sizes = [2**k for k in range(10)]
    ratio_panel(ax, sizes, {"ours / theirs": [1.4 + 0.001 * k for k in range(10)]}, xlabel="n",
                bounds={"1.5x (the claim)": 1.5})
    low, high = ax.get_ylim()
    assert 1.35 < low < 1.4 and high > 1.5
    assert "16" not in [t.get_text() for t in ax.get_xticklabels()] and len(ax.get_xticks()) < len(sizes)
    plt.close(fig)


def test_median_centre_draws_the_median_and_each_seed_and_rejects_other_centres():
    fig, ax = plt.subplots()
    rows = [[1.0, 2.0, 4.0], [1.0, 2.0, 40.0], [1.0, 2.0, 8.0]]
    cost_panel(ax, [1, 2, 4], {"ours": rows}, xlabel="n", center="median")
    centre, seeds = ax.get_lines()[:2]
    assert np.allclose(centre.get_ydata(), [1.0, 2.0, 8.0]) and len(seeds.get_ydata()) == 9
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ours (slope 1.50, median of 3)"]
    with pytest.raises(ValueError, match="center must be one of"):
        ratio_panel(ax, [1, 2, 4], {"r": rows}, xlabel="n", center="max")
    plt.close(fig)
