"""Validation checks of the Burgers and Darcy solvers in icml25.data.pde."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft as sfft

from icml25.data.pde import (
    burgers_1d,
    darcy_2d,
    darcy_residual,
    grf_1d,
    grf_2d,
    solve_burgers,
    solve_darcy,
)


def test_grf_1d_spectrum_and_determinism():
    u = grf_1d(4000, 64, seed=0)
    assert u.shape == (4000, 64)
    assert np.allclose(u.mean(axis=1), 0, atol=1e-12)  # zero mean mode
    coef = sfft.rfft(u, norm="forward")
    k = np.arange(1, 6)
    expected = 2 * (25 / (4 * np.pi**2 * k**2 + 25)) ** 2 / 2  # E|c_k|^2 = std_k^2
    assert np.allclose(np.mean(np.abs(coef[:, 1:6]) ** 2, axis=0), expected, rtol=0.1)
    assert np.array_equal(grf_1d(3, 64, seed=5), grf_1d(3, 64, seed=5))
    assert 0.3 < u.std() < 1.5


def test_grf_2d_shape():
    a = grf_2d(3, 16, seed=1)
    assert a.shape == (3, 16, 16) and np.isfinite(a).all()


def test_burgers_energy_decreases_monotonically():
    u0 = grf_1d(8, 128, seed=1)
    u, energy = solve_burgers(u0, nu=0.1, T=0.2, dt=5e-4, return_energy=True)
    assert energy.shape == (8, 401)
    assert np.all(np.diff(energy, axis=1) <= 1e-14)
    assert np.allclose(energy[:, -1], np.mean(u**2, axis=1))


def test_burgers_time_step_convergence():
    u0 = grf_1d(4, 128, seed=2)
    coarse = solve_burgers(u0, dt=1e-3 / 3, T=0.5)
    fine = solve_burgers(u0, dt=1e-3 / 6, T=0.5)
    assert np.linalg.norm(coarse - fine) / np.linalg.norm(fine) < 1e-5


def test_burgers_linear_case_is_the_heat_equation():
    x = np.arange(64) / 64
    u0 = np.stack([np.sin(2 * np.pi * x), np.cos(6 * np.pi * x)])
    u = solve_burgers(u0, nu=0.05, T=0.3, dt=1e-3, nonlinear=False)
    decay = np.exp(-0.05 * np.array([1.0, 9.0]) * 4 * np.pi**2 * 0.3)[:, None]
    assert np.allclose(u, u0 * decay, atol=1e-12)


def test_burgers_nonlinear_term_matters_and_steepens():
    u0 = grf_1d(4, 128, seed=3)
    u = solve_burgers(u0, T=0.5)
    heat = solve_burgers(u0, T=0.5, nonlinear=False)
    assert np.linalg.norm(u - heat) / np.linalg.norm(u) > 1e-2


def test_burgers_bad_input():
    u0 = grf_1d(2, 64, seed=0)
    with pytest.raises(ValueError, match=r"nu must be a real number in \(0, inf\), got 0.0"):
        solve_burgers(u0, nu=0.0)
    with pytest.raises(TypeError, match="dt must be a real number"):
        solve_burgers(u0, dt="0.1")
    with pytest.raises(ValueError, match="CFL number"):
        solve_burgers(10 * u0, dt=1e-2)
    with pytest.raises(ValueError, match="u0 must contain only finite values"):
        solve_burgers(np.full((2, 64), np.nan))
    with pytest.raises(ValueError, match="shape"):
        solve_burgers(u0[0])


def test_burgers_dataset_cached_and_subsampled(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    u0, uT = burgers_1d(3, grid=32, solver_grid=64, T=0.1, seed=4)
    assert u0.shape == uT.shape == (3, 32)
    assert len(list(tmp_path.glob("burgers_*.npz"))) == 1
    fine0, fineT = burgers_1d(3, grid=64, solver_grid=64, T=0.1, seed=4)
    assert np.array_equal(fine0[:, ::2], u0) and np.array_equal(fineT[:, ::2], uT)
    with pytest.raises(ValueError, match="multiple of grid"):
        burgers_1d(3, grid=48, solver_grid=64)
    with pytest.raises(TypeError, match="n must be an integer >= 1"):
        burgers_1d(2.5, grid=32, solver_grid=64)


def test_burgers_generator_seed_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    u0, _ = burgers_1d(2, grid=32, solver_grid=32, T=0.05, seed=np.random.default_rng(4))
    assert u0.shape == (2, 32) and not list(tmp_path.glob("burgers_*.npz"))


def test_darcy_constant_coefficient_matches_discrete_poisson_solution():
    m = 15
    u = solve_darcy(np.full((m, m), 2.0))
    # exact solution of the 5-point Dirichlet Laplacian by the type-I sine transform
    h = 1.0 / (m + 1)
    lam = (2 - 2 * np.cos(np.pi * np.arange(1, m + 1) * h)) / h**2
    rhs_hat = sfft.dstn(np.full((m, m), 1.0 / 2.0), type=1)
    exact = sfft.idstn(rhs_hat / (lam[:, None] + lam[None, :]), type=1)
    assert np.allclose(u, exact, atol=1e-12)
    # and it approximates the continuous solution (max about 0.0737 / a at the centre)
    assert abs(u[m // 2, m // 2] - 0.07367 / 2) < 1e-3


def test_darcy_residual_and_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path))
    a, u = darcy_2d(3, grid=16, seed=0)
    assert a.shape == u.shape == (3, 16, 16)
    assert set(np.unique(a)) <= {3.0, 12.0}
    assert np.all(u > 0)
    exact = solve_darcy(a[0].astype(np.float64))
    assert darcy_residual(a[0], exact) < 1e-10
    assert np.array_equal(darcy_2d(3, grid=16, seed=0)[1], u)


def test_darcy_bad_input():
    with pytest.raises(ValueError, match="a must have positive entries"):
        solve_darcy(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="a must contain only finite values"):
        solve_darcy(np.full((4, 4), np.inf))
    with pytest.raises(ValueError, match="u must contain only finite values"):
        darcy_residual(np.ones((4, 4)), np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="square"):
        solve_darcy(np.ones((4, 5)))
