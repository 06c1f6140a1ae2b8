"""PDE benchmark data of the FNO papers, solved offline: 1-D viscous Burgers and 2-D Darcy flow.

Both generators are NumPy/SciPy only, deterministic from a seed and cached as ``.npz`` in
``icml25.data.cache_dir()`` (the solve runs once per parameter set).

- Burgers: ``u_t + (u^2/2)_x = nu u_xx`` on the periodic unit interval, initial conditions from the
  Gaussian random field ``N(0, 625 (-Laplacian + 25 I)^-2)``; Fourier pseudo-spectral solver with an
  exact integrating factor for the diffusion, classical RK4 for the nonlinear term and 2/3-rule
  de-aliasing, vectorised over the batch of initial conditions.
- Darcy: ``-div(a grad u) = 1`` on the unit square with ``u = 0`` on the boundary, ``a = 12`` where a
  Gaussian random field ``N(0, (-Laplacian + 9 I)^-2)`` is non-negative and ``3`` elsewhere; 5-point
  finite differences with harmonic-mean face coefficients, solved by a sparse direct solver.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.fft as sfft
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from icml25.data.cache import cached_npz
from icml25.utils.random import Seed, as_generator, check_seed
from icml25.utils.validation import check_array, check_scalar

__all__ = [
    "burgers_1d",
    "darcy_2d",
    "darcy_matrix",
    "darcy_residual",
    "grf_1d",
    "grf_2d",
    "solve_burgers",
    "solve_darcy",
]


def grf_1d(n: int, grid: int, alpha: float = 2.0, tau: float = 5.0, sigma: float | None = None,
           seed: Seed = 0) -> np.ndarray:
    """``n`` periodic samples of ``N(0, sigma^2 (-Laplacian + tau^2 I)^-alpha)`` on ``grid`` points of [0, 1).

    Sampled in Fourier space: mode ``k != 0`` has standard deviation
    ``sigma (4 pi^2 k^2 + tau^2)^(-alpha/2)``; the mean mode and the Nyquist mode are zero.
    ``sigma`` defaults to ``tau^alpha`` (the FNO Burgers field: 625 (-Laplacian + 25 I)^-2).
    Returns an array of shape (n, grid).
    """
    n, grid = check_scalar(n, "n", "int", min=1), check_scalar(grid, "grid", "int", min=4)
    sigma = tau**alpha if sigma is None else check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither")
    rng = as_generator(seed)
    k = np.arange(grid // 2 + 1)
    std = sigma * (4 * np.pi**2 * k**2 + tau**2) ** (-alpha / 2)
    std[0] = 0.0
    if grid % 2 == 0:
        std[-1] = 0.0
    coef = (rng.standard_normal((n, k.size)) + 1j * rng.standard_normal((n, k.size))) * std / np.sqrt(2)
    return sfft.irfft(coef, n=grid, norm="forward")


def grf_2d(n: int, grid: int, alpha: float = 2.0, tau: float = 3.0, sigma: float = 1.0,
           seed: Seed = 0) -> np.ndarray:
    """``n`` periodic samples of ``N(0, sigma^2 (-Laplacian + tau^2 I)^-alpha)`` on a ``grid x grid`` mesh.

    Mode ``(k1, k2) != 0`` gets a complex normal coefficient of scale ``sigma (4 pi^2 |k|^2 + tau^2)^(-alpha/2)``
    and the field is the real part of the resulting complex field. Returns (n, grid, grid).
    """
    n, grid = check_scalar(n, "n", "int", min=1), check_scalar(grid, "grid", "int", min=4)
    check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither")
    rng = as_generator(seed)
    k = np.fft.fftfreq(grid, d=1.0 / grid)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    std = sigma * (4 * np.pi**2 * k2 + tau**2) ** (-alpha / 2)
    std[0, 0] = 0.0
    coef = (rng.standard_normal((n, grid, grid)) + 1j * rng.standard_normal((n, grid, grid))) * std
    return np.real(sfft.ifft2(coef, norm="forward"))


def solve_burgers(u0: np.ndarray, nu: float = 0.1, T: float = 1.0, dt: float = 2e-4, nonlinear: bool = True,
                  return_energy: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Solve ``u_t + (u^2/2)_x = nu u_xx`` on the periodic unit interval from each row of ``u0`` to time T.

    Integrating-factor RK4 (the diffusion is integrated exactly, the 2/3-rule de-aliased flux by RK4)
    with ``ceil(T/dt)`` equal steps. ``nonlinear=False`` drops the flux (the heat equation, solved
    exactly). Raises ``ValueError`` when ``nu <= 0`` or when the CFL number ``max|u0| dt / dx``
    exceeds 0.5 (by the maximum principle ``max|u|`` never grows), and ``FloatingPointError`` if the
    solution is not finite. ``return_energy`` also returns ``mean(u^2)`` per sample after every step,
    shape (n, n_steps + 1).
    """
    u0 = check_array(u0, "u0", ndim=2, dtype=np.float64)
    if u0.shape[1] < 4:
        raise ValueError(f"u0 must have shape (n_samples, grid) with grid >= 4, got shape {u0.shape}")
    nu, T, dt = (check_scalar(v, name, "real", min=0.0, inclusive="neither")
                 for v, name in ((nu, "nu"), (T, "T"), (dt, "dt")))
    grid = u0.shape[1]
    n_steps = max(1, math.ceil(T / dt - 1e-9))
    dt = T / n_steps
    cfl = float(np.abs(u0).max()) * dt * grid
    if cfl > 0.5:
        raise ValueError(f"dt = {dt:.3g} is too large: CFL number max|u0| dt / dx = {cfl:.3g} > 0.5")
    kappa = 2 * np.pi * np.arange(grid // 2 + 1)
    keep = np.arange(grid // 2 + 1) < grid / 3  # 2/3 rule
    half = np.exp(-nu * kappa**2 * dt / 2)
    full = half**2
    flux = -0.5j * kappa * keep * dt

    def step_flux(v: np.ndarray) -> np.ndarray:
        u = sfft.irfft(v * keep, n=grid)
        return flux * sfft.rfft(u * u)

    v = sfft.rfft(u0)
    energy = [np.mean(u0**2, axis=1)] if return_energy else []
    for _ in range(n_steps):
        if nonlinear:
            a = step_flux(v)
            b = step_flux(half * (v + a / 2))
            c = step_flux(half * v + b / 2)
            d = step_flux(full * v + half * c)
            v = full * v + (full * a + 2 * half * (b + c) + d) / 6
        else:
            v = full * v
        if return_energy:
            energy.append(np.mean(sfft.irfft(v, n=grid) ** 2, axis=1))
    u = sfft.irfft(v, n=grid)
    if not np.all(np.isfinite(u)):
        raise FloatingPointError("the Burgers solution is not finite; decrease dt")
    return (u, np.stack(energy, axis=1)) if return_energy else u


def burgers_1d(n: int, grid: int = 128, nu: float = 0.1, T: float = 1.0, solver_grid: int = 256,
               dt: float = 5e-4, seed: Seed = 0, cache: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The FNO Burgers benchmark: ``(u0, u(T))``, each (n, grid), solved on ``solver_grid`` points.

    ``solver_grid`` must be a multiple of ``grid`` (the solution is subsampled), so the same seed and
    solver settings give the same samples at every ``grid`` that divides ``solver_grid`` (train at
    128, evaluate at 256). Cached per (n, nu, T, solver_grid, dt, seed) when ``cache`` and ``seed`` is an
    int (a Generator or None draws fresh samples that are not cached).
    """
    n, grid = check_scalar(n, "n", "int", min=1), check_scalar(grid, "grid", "int", min=4)
    solver_grid = check_scalar(solver_grid, "solver_grid", "int", min=4)
    if solver_grid % grid:
        raise ValueError(f"solver_grid ({solver_grid}) must be a multiple of grid ({grid})")
    nu, T, dt = (check_scalar(v, name, "real", min=0.0, inclusive="neither")
                 for v, name in ((nu, "nu"), (T, "T"), (dt, "dt")))

    def make() -> dict[str, np.ndarray]:
        u0 = grf_1d(n, solver_grid, seed=seed)
        return {"u0": u0.astype(np.float32), "uT": solve_burgers(u0, nu, T, dt).astype(np.float32)}

    key = f"burgers_n{n}_nu{nu:g}_T{T:g}_s{solver_grid}_dt{dt:g}_seed{seed}"
    data = cached_npz(key, make) if cache and isinstance(check_seed(seed), int) else make()
    stride = solver_grid // grid
    return data["u0"][:, ::stride], data["uT"][:, ::stride]


def darcy_matrix(a: np.ndarray) -> sp.csr_matrix:
    """The 5-point matrix of ``-div(a grad u)`` on the interior ``m x m`` grid of the unit square (u = 0 outside).

    ``h = 1/(m+1)``; a face between two interior nodes uses the harmonic mean of their ``a``; a face to
    the boundary uses the node's own ``a``. Unknowns are ordered row-major; the matrix is scaled by h^2.
    """
    a = check_array(a, "a", ndim=2, dtype=np.float64)
    if a.shape[0] != a.shape[1] or a.shape[0] < 2:
        raise ValueError(f"a must be a square 2-D array of size >= 2, got shape {a.shape}")
    if np.any(a <= 0):
        raise ValueError(f"a must have positive entries, got min {a.min():g}")
    m = a.shape[0]
    idx = np.arange(m * m).reshape(m, m)
    east = 2 * a[:, :-1] * a[:, 1:] / (a[:, :-1] + a[:, 1:])  # faces between (i, j) and (i, j+1)
    south = 2 * a[:-1, :] * a[1:, :] / (a[:-1, :] + a[1:, :])  # faces between (i, j) and (i+1, j)
    diag = np.zeros((m, m))
    diag[:, :-1] += east
    diag[:, 1:] += east
    diag[:-1, :] += south
    diag[1:, :] += south
    diag[:, 0] += a[:, 0]
    diag[:, -1] += a[:, -1]
    diag[0, :] += a[0, :]
    diag[-1, :] += a[-1, :]
    west_i, east_i, north_i, south_i = idx[:, :-1].ravel(), idx[:, 1:].ravel(), idx[:-1, :].ravel(), idx[1:, :].ravel()
    rows = np.concatenate([idx.ravel(), west_i, east_i, north_i, south_i])
    cols = np.concatenate([idx.ravel(), east_i, west_i, south_i, north_i])
    vals = np.concatenate([diag.ravel(), -east.ravel(), -east.ravel(), -south.ravel(), -south.ravel()])
    return sp.csr_matrix((vals, (rows, cols)), shape=(m * m, m * m))


def solve_darcy(a: np.ndarray, f: float = 1.0) -> np.ndarray:
    """Solve ``-div(a grad u) = f`` with ``u = 0`` on the boundary; ``a`` (m, m) on the interior nodes."""
    matrix = darcy_matrix(a)
    f = check_scalar(f, "f", "real")
    m = np.shape(a)[0]
    h = 1.0 / (m + 1)
    u = spla.spsolve(matrix.tocsc(), np.full(m * m, f * h * h))
    if not np.all(np.isfinite(u)):
        raise FloatingPointError("the Darcy solution is not finite")
    return u.reshape(m, m)


def darcy_residual(a: np.ndarray, u: np.ndarray, f: float = 1.0) -> float:
    """Max-norm residual of the discrete Darcy system (scaled by h^2) for a computed ``u``."""
    matrix = darcy_matrix(a)
    m = np.shape(a)[0]
    u = check_array(u, "u", shape=(m, m), dtype=np.float64)
    f = check_scalar(f, "f", "real")
    h = 1.0 / (m + 1)
    return float(np.abs(matrix @ u.ravel() - f * h * h).max())


def darcy_2d(n: int, grid: int = 32, a_high: float = 12.0, a_low: float = 3.0, seed: Seed = 0,
             cache: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The FNO Darcy benchmark: ``(a, u)``, each (n, grid, grid), on the interior nodes of the unit square.

    ``a = a_high`` where a periodic GRF ``N(0, (-Laplacian + 9 I)^-2)`` sampled on the node grid is
    ``>= 0``, else ``a_low``; ``u`` solves ``-div(a grad u) = 1`` with zero boundary values.
    Cached per (n, grid, a_high, a_low, seed) when ``cache`` and ``seed`` is an int.
    """
    n, grid = check_scalar(n, "n", "int", min=1), check_scalar(grid, "grid", "int", min=4)
    a_high, a_low = (check_scalar(v, name, "real", min=0.0, inclusive="neither")
                     for v, name in ((a_high, "a_high"), (a_low, "a_low")))

    def make() -> dict[str, np.ndarray]:
        field = grf_2d(n, grid, alpha=2.0, tau=3.0, seed=seed)
        a = np.where(field >= 0, a_high, a_low)
        u = np.stack([solve_darcy(sample) for sample in a])
        return {"a": a.astype(np.float32), "u": u.astype(np.float32)}

    key = f"darcy_n{n}_g{grid}_a{a_high:g}-{a_low:g}_seed{seed}"
    data = cached_npz(key, make) if cache and isinstance(check_seed(seed), int) else make()
    return data["a"], data["u"]
