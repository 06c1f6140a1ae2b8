"""Unit tests of icml25.privacy.sparse_histogram (gradual release of sparse histograms)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from icml25.privacy import SparseHistogramGradualRelease, ZeroBinFilter
from icml25.privacy import sparse_histogram as sh

SIGMAS = [3.0, 2.0, 1.2]
TAUS = [4.0, 3.5, 2.0]


def _orthant_probabilities(sigmas, taus):
    """p_j from multivariate normal CDFs (accurate at these moderate thresholds)."""
    s = np.array(sigmas) ** 2
    cov = np.minimum.outer(s, s)

    def below(j):
        if j == 0:
            return 1.0
        # Genz's randomised lattice rule: a fixed generator and many points make the reference repeatable
        mvn = stats.multivariate_normal(np.zeros(j), cov[:j, :j], abseps=1e-12, releps=1e-10, maxpts=2_000_000)
        return mvn.cdf(taus[:j], rng=np.random.default_rng(0))

    return [(below(j) - below(j + 1)) / below(j) for j in range(len(sigmas))]


def test_filter_matches_multivariate_normal_cdf():
    f = ZeroBinFilter()
    ours = [f.step(s * s, t) for s, t in zip(SIGMAS, TAUS, strict=True)]
    assert ours[0] == stats.norm.sf(TAUS[0] / SIGMAS[0])
    assert np.allclose(ours, _orthant_probabilities(SIGMAS, TAUS), rtol=1e-6)


def test_filter_handles_close_levels_and_tiny_probabilities():
    f = ZeroBinFilter()
    ours = [f.step(s * s, 2.0 * s) for s in (2.0, 1.9, 1.89)]
    assert np.allclose(ours, _orthant_probabilities([2.0, 1.9, 1.89], [4.0, 3.8, 3.78]), rtol=2e-5)
    f = ZeroBinFilter()
    tiny = [f.step(s * s, 7.0 * s) for s in (4.0, 2.0, 1.0)]
    assert tiny[0] == pytest.approx(stats.norm.sf(7.0), rel=1e-12)
    assert all(1e-13 < p < 1e-11 for p in tiny)
    with pytest.raises(ValueError, match="decreasing"):
        f.step(4.0, 1.0)


def test_normal_tail_sampler():
    rng = np.random.default_rng(0)
    for a in (-1.0, 0.5, 6.0):
        x = sh._normal_tail(rng, a, 20_000)
        assert np.all(x > a)
        assert stats.kstest(x, stats.truncnorm(a, np.inf).cdf).pvalue > 1e-4


def test_variant_a_reports_only_nonzero_bins_with_brownian_noise():
    counts = {k: 50 for k in range(0, 400, 2)}
    h = SparseHistogramGradualRelease(counts, domain_size=10**9, variant="A", seed=1)
    first = h.release(sigma=4.0, threshold=0.0)
    second = h.release(sigma=1.0, threshold=45.0)
    assert set(first) == set(counts) and set(second) <= set(counts)
    assert h.n_materialised == 200 and h.crossing_probabilities == [0.0, 0.0]
    noise1 = np.array([first[k] - 50 for k in sorted(first)])
    assert abs(noise1.std() - 4.0) < 0.6


def test_variant_b_zero_bin_counts_match_dense_brute_force():
    d, counts, reps = 300, {1: 5, 7: 9, 200: 30}, 1200
    sigmas, taus = [2.0, 1.5, 1.0], [4.0, 3.5, 2.5]
    lazy = np.zeros((reps, 3))
    for r in range(reps):
        h = SparseHistogramGradualRelease(counts, d, seed=r)
        for j in range(3):
            out = h.release(sigma=sigmas[j], threshold=taus[j])
            lazy[r, j] = sum(k not in counts for k in out)
    rng = np.random.default_rng(123)
    s = np.array(sigmas) ** 2
    z = math.sqrt(s[0]) * rng.standard_normal((reps, d - len(counts)))
    dense = np.zeros((reps, 3))
    for j in range(3):
        if j:
            z = (s[j] / s[j - 1]) * z + math.sqrt(s[j] * (s[j - 1] - s[j]) / s[j - 1]) * rng.standard_normal(
                z.shape
            )
        dense[:, j] = (z > taus[j]).sum(axis=1)
    se = np.sqrt(lazy.var(axis=0) / reps + dense.var(axis=0) / reps)
    assert np.all(np.abs(lazy.mean(axis=0) - dense.mean(axis=0)) < 4 * se)
    assert np.all(dense.mean(axis=0) > 1)


def test_variant_b_huge_domain_is_fast_and_deterministic():
    counts = {k * 10**9: 100 for k in range(200)}
    runs = []
    for _ in range(2):
        h = SparseHistogramGradualRelease(counts, domain_size=10**12, seed=7)
        runs.append([h.release(sigma, 7.0 * sigma + 0.0) for sigma in (4.0, 2.0, 1.0)])
    assert runs[0] == runs[1]
    assert h.n_materialised < 260
    assert all(k in runs[0][2] for k in counts)


def test_too_low_threshold_is_refused_without_changing_state():
    h = SparseHistogramGradualRelease({5: 3}, domain_size=10**12, seed=0)
    h.release(sigma=2.0, threshold=20.0)
    with pytest.raises(ValueError, match="zero bins"):
        h.release(sigma=1.0, threshold=0.0)
    assert h.sigmas == [2.0] and h.n_materialised < 5
    h.release(sigma=1.0, threshold=10.0)
    assert h.sigmas == [2.0, 1.0]


def test_small_domain_can_be_exhausted():
    h = SparseHistogramGradualRelease({0: 1}, domain_size=20, seed=0)
    out = h.release(sigma=1.0, threshold=-100.0)
    assert len(out) == 20 and h.n_materialised == 20
    assert len(h.release(sigma=0.5, threshold=100.0)) == 0


def test_empty_domain_and_counts():
    h = SparseHistogramGradualRelease({}, domain_size=0, seed=0)
    assert h.release(sigma=1.0, threshold=0.0) == {}


def test_bad_input():
    with pytest.raises(ValueError, match="variant"):
        SparseHistogramGradualRelease({}, 10, variant="C")
    with pytest.raises(ValueError, match="domain_size"):
        SparseHistogramGradualRelease({}, -1)
    with pytest.raises(ValueError, match=r"key must be an integer in \[0, 9\]"):
        SparseHistogramGradualRelease({10: 1}, 10)
    with pytest.raises(TypeError, match=r"counts\[1\] must be an integer >= 0"):
        SparseHistogramGradualRelease({1: 1.5}, 10)
    with pytest.raises(ValueError, match=r"counts\[1\] must be an integer >= 0"):
        SparseHistogramGradualRelease({1: -2}, 10)
    with pytest.raises(TypeError, match="mapping"):
        SparseHistogramGradualRelease([1, 2], 10)
    h = SparseHistogramGradualRelease({1: 4}, 10, seed=0)
    with pytest.raises(ValueError, match="threshold"):
        h.release(sigma=1.0, threshold=math.nan)
    with pytest.raises(ValueError, match="sigma"):
        h.release(sigma=0.0, threshold=1.0)
    h.release(sigma=1.0, threshold=1.0)
    with pytest.raises(ValueError, match="decreasing"):
        h.release(sigma=1.0, threshold=1.0)


def test_filter_cache_is_shared_and_clearable():
    sh.clear_filter_cache()
    a = SparseHistogramGradualRelease({3: 9}, domain_size=10**6, seed=0)
    b = SparseHistogramGradualRelease({4: 1}, domain_size=10**12, seed=1)
    for h in (a, b):
        h.release(sigma=2.0, threshold=16.0)
        h.release(sigma=1.0, threshold=8.0)
    assert a.crossing_probabilities == b.crossing_probabilities
    assert sh._filter_after.cache_info().hits >= 2
    sh.clear_filter_cache()
    assert sh._filter_after.cache_info().currsize == 0


def test_zero_bin_filter_step_rejects_bad_arguments():
    """issue 19: a NaN variance or threshold was accepted silently; s <= 0 divided by zero."""
    for s, tau, error in ((math.nan, 1.0, ValueError), (0.0, 1.0, ValueError), (1.0, math.nan, ValueError),
                          (1.0, "abc", TypeError)):
        with pytest.raises(error, match="s must be" if tau == 1.0 else "tau must be"):
            ZeroBinFilter().step(s, tau)
    f = ZeroBinFilter()
    f.step(4.0, 3.0)
    with pytest.raises(ValueError, match="s must be smaller than the previous variance"):
        f.step(4.0, 3.0)
    with pytest.raises(ValueError, match="domain_size"):
        SparseHistogramGradualRelease({3: 1}, domain_size=0)
