"""Worst-case expectations over ambiguity balls, and robust value iteration (robust_mcts).

The robust Bellman backup of Dam, Panaganti, Driss & Wierman (ICML 2025) replaces the nominal
expectation ``p @ v`` by ``sigma(p, v) = min_{q in B_rho(p)} q @ v`` over a ball of radius ``rho``
around ``p`` on the probability simplex.  Three balls are supported, each solved exactly:

* ``"tv"``: total variation ``1/2 ||q - p||_1 <= rho``.  Greedy: move up to ``rho`` mass from the
  highest-value entries onto the lowest-value entry (``O(S log S)``).
* ``"chi2"``: ``sum_i (q_i - p_i)^2 / p_i <= rho``.  Dual
  ``max_eta eta - sqrt((1 + rho) E_p[(eta - v)_+^2])``, concave in ``eta``; its maximiser has a
  closed form on each interval between sorted values.
* ``"wasserstein"``: ``W1(q, p) <= rho`` for a ground metric ``dist``.  Dual
  ``max_{lam >= 0} -lam rho + sum_i p_i min_j (v_j + lam d_ij)``, piecewise linear and concave in
  ``lam``; the maximum sits at ``lam = 0`` or where two lines ``v_j + lam d_ij`` of a row cross.
* ``"none"``: the nominal expectation (the radius is ignored).

``q`` ranges over the simplex on the entries passed in: entries with ``p_i = 0`` may receive mass
under TV and W1, never under chi-square (infinite divergence).  Pass only the support to restrict
the ball to it (this is what the tree search does: it only knows the children it has observed).

Example
-------
>>> import numpy as np
>>> from icml25.planning import robust_expectation
>>> p, v = np.array([0.5, 0.3, 0.2]), np.array([1.0, 0.5, 0.0])
>>> round(robust_expectation(p, v, 0.1, "tv"), 6)        # 0.1 mass moved from v=1 to v=0
0.55
>>> round(robust_expectation(p, v, 0.0, "chi2"), 6) == round(float(p @ v), 6)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from icml25.planning._kernels import w1_kernel, worst_case_kernel
from icml25.utils.validation import check_array, check_choice, check_probability_vector, check_scalar

Kind = Literal["tv", "chi2", "wasserstein", "none"]
KINDS: tuple[str, ...] = ("tv", "chi2", "wasserstein", "none")

__all__ = [
    "KINDS",
    "chi2_worst",
    "check_distance_matrix",
    "check_kind",
    "check_radius",
    "robust_expectation",
    "robust_value_iteration",
    "tv_worst",
    "w1_worst",
    "worst_case",
]


def check_kind(kind: str) -> str:
    """Return ``kind`` if it names an ambiguity set, else raise ``ValueError``."""
    return check_choice(kind, "kind", KINDS)


def check_radius(rho: float, name: str = "rho") -> float:
    """A radius is a real number in ``[0, inf]`` (0 = nominal, inf = fully adversarial); radii past the
    simplex's diameter give ``min(v)``."""
    return check_scalar(rho, name, "real", min=0.0, allow_inf=True)


def check_distance_matrix(dist: np.ndarray, size: int) -> np.ndarray:
    """Validate a W1 ground metric: ``(size, size)``, finite, symmetric, non-negative, zero diagonal."""
    d = check_array(dist, "dist", shape=(size, size), dtype=float)
    if np.any(d < 0):
        raise ValueError(f"dist must have non-negative entries, got min {d.min():g}")
    if not np.allclose(d, d.T, atol=1e-12) or np.any(np.diag(d) != 0):
        raise ValueError("dist must be symmetric with a zero diagonal")
    return d


def _check_p_v(p: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = check_probability_vector(p, "p")
    v = check_array(v, "v", shape=p.shape, dtype=float)
    return p, v


def _check_batch(p: np.ndarray, v: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Validated batched operands: ``p`` rows are probability vectors, ``v`` finite and broadcastable."""
    p = check_array(p, "p", dtype=float, min_len=1)
    p = check_probability_vector(p, "p", ndim=max(p.ndim, 1))
    v = check_array(v, "v", dtype=float, min_len=1)
    if v.ndim == 0 or v.shape[-1] != p.shape[-1]:
        raise ValueError(f"v must have p's last axis ({p.shape[-1]} entries), got shape {v.shape}")
    try:
        np.broadcast_shapes(p.shape, v.shape)
    except ValueError:
        raise ValueError(f"p and v must broadcast together, got shapes {p.shape} and {v.shape}") from None
    return p, v, check_radius(rho)


def tv_worst(p: np.ndarray, v: np.ndarray, rho: float) -> np.ndarray:
    """``min q @ v`` over ``1/2 ||q - p||_1 <= rho`` on the simplex, batched over leading axes.

    ``p``: ``(..., S)`` rows that are probability vectors; ``v``: finite ``(..., S)`` values
    broadcasting against ``p``; ``rho >= 0``.
    """
    return _tv_worst(*_check_batch(p, v, rho))


def _tv_worst(p: np.ndarray, v: np.ndarray, rho: float) -> np.ndarray:
    p, v = np.broadcast_arrays(np.asarray(p, float), np.asarray(v, float))
    nominal = np.einsum("...i,...i->...", p, v)
    if rho == 0.0:
        return nominal
    v_min = v.min(axis=-1)
    j_min = v.argmin(axis=-1)
    p_low = np.take_along_axis(p, j_min[..., None], -1)[..., 0]
    moved = np.minimum(rho, 1.0 - p_low)
    order = np.argsort(-v, axis=-1, kind="stable")
    p_desc = np.take_along_axis(p, order, -1)
    v_desc = np.take_along_axis(v, order, -1)
    mass_before = np.cumsum(p_desc, axis=-1) - p_desc
    taken = np.clip(moved[..., None] - mass_before, 0.0, p_desc)
    out = nominal - np.einsum("...i,...i->...", taken, v_desc - v_min[..., None])
    return np.where(rho >= 1.0 - p_low, v_min, np.clip(out, v_min, nominal))


def chi2_worst(p: np.ndarray, v: np.ndarray, rho: float) -> np.ndarray:
    """``min q @ v`` over ``sum_i (q_i - p_i)^2 / p_i <= rho``, batched over leading axes.

    Arguments as in :func:`tv_worst`.
    """
    return _chi2_worst(*_check_batch(p, v, rho))


def _chi2_worst(p: np.ndarray, v: np.ndarray, rho: float) -> np.ndarray:
    """Unvalidated :func:`chi2_worst`.

    Solved through the dual ``max_eta eta - sqrt((1 + rho) E_p[(eta - v)_+^2])``: on each interval
    ``[v_(j), v_(j+1))`` of the sorted values the maximiser is ``m_j + sqrt(var_j / (c P_j - 1))``
    (``c = 1 + rho``, ``P_j, m_j, var_j`` the mass, mean and variance of the ``j`` lowest values),
    so the maximum is taken over these points and the breakpoints.  Entries with ``p_i = 0`` are
    outside the ball's support.
    """
    p, v = np.broadcast_arrays(np.asarray(p, float), np.asarray(v, float))
    nominal = np.einsum("...i,...i->...", p, v)
    if rho == 0.0:
        return nominal
    support = p > 0
    v_min = np.where(support, v, np.inf).min(axis=-1)
    if math.isinf(rho):
        return v_min
    c = 1.0 + rho
    v = v - v_min[..., None]  # sigma(v + t) = sigma(v) + t; shifting keeps the prefix variances accurate
    order = np.argsort(v, axis=-1, kind="stable")
    p_s = np.take_along_axis(p, order, -1)
    v_s = np.take_along_axis(v, order, -1)
    mass = np.cumsum(p_s, axis=-1)
    mean = np.cumsum(p_s * v_s, axis=-1) / np.maximum(mass, 1e-300)
    var = np.maximum(np.cumsum(p_s * v_s**2, axis=-1) / np.maximum(mass, 1e-300) - mean**2, 0.0)
    denom = c * mass - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        eta_stat = np.where(denom > 0, mean + np.sqrt(var / np.where(denom > 0, denom, 1.0)), v_s)
    upper = np.concatenate([v_s[..., 1:], np.full(v_s.shape[:-1] + (1,), np.inf)], axis=-1)
    eta_stat = np.clip(eta_stat, v_s, upper)
    eta = np.concatenate([v_s, eta_stat], axis=-1)
    gap = np.maximum(eta[..., :, None] - v[..., None, :], 0.0)
    dual = eta - np.sqrt(c * np.einsum("...ki,...i->...k", gap**2, p))
    return np.clip(dual.max(axis=-1) + v_min, v_min, nominal)


def w1_worst(p: np.ndarray, v: np.ndarray, rho: float, dist: np.ndarray) -> np.ndarray:
    """``min q @ v`` over ``W1(q, p) <= rho`` with ground metric ``dist``, batched over leading axes.

    ``p``, ``v``: ``(..., S)``; ``dist``: ``(S, S)`` or ``(..., S, S)``.  The dual
    ``g(lam) = -lam rho + sum_i p_i min_j (v_j + lam d_ij)`` is concave and piecewise linear in
    ``lam >= 0``; its kinks are crossings of two lines of one row, ``lam = (v_k - v_j) / (d_ij - d_ik)``,
    so the maximum is taken over ``lam = 0`` and these ``O(S^3)`` points (``O(S^5)`` work: meant
    for the small supports of a search tree or a sparse transition row).  ``dist`` must be finite,
    non-negative and symmetric with a zero diagonal.
    """
    p, v, rho = _check_batch(p, v, rho)
    d = check_array(dist, "dist", dtype=float)
    size = p.shape[-1]
    if d.ndim < 2 or d.ndim > p.ndim + 1 or d.shape[-2:] != (size, size):
        raise ValueError(f"dist must have shape ({size}, {size}) or p's leading axes + ({size}, {size}), "
                         f"got shape {d.shape}")
    try:
        if np.broadcast_shapes(p.shape + (size,), d.shape) != p.shape + (size,):
            raise ValueError
    except ValueError:
        raise ValueError(f"dist must broadcast against p, got shapes {d.shape} and {p.shape}") from None
    if np.any(d < 0):
        raise ValueError(f"dist must have non-negative entries, got min {d.min():g}")
    if not np.allclose(d, np.swapaxes(d, -1, -2), atol=1e-12) or np.any(np.diagonal(d, axis1=-2, axis2=-1) != 0):
        raise ValueError("dist must be symmetric with a zero diagonal")
    return w1_kernel(p, v, rho, d)


def worst_case(p: Sequence[float], v: Sequence[float], rho: float, kind: Kind, dist: np.ndarray | None = None) -> float:
    """Single-instance ``min_{q in B_rho(p)} q @ v`` for the small supports of a search tree.

    Pure Python versions of :func:`tv_worst` and :func:`chi2_worst` (the same algorithms, without
    NumPy's per-call overhead, which dominates at 2-10 entries); Wasserstein uses the dual's
    breakpoints in pure Python up to 4 entries and :func:`w1_worst` above.  Arguments as in
    :func:`robust_expectation` (validated the same way; the tree search calls the unvalidated kernel).
    """
    if not _plain_valid(p, v, rho, kind, dist):  # lists of floats take this cheap check only
        kind = check_kind(kind)
        rho = check_radius(rho)
        p, v = _check_p_v(p, v)
        if kind == "wasserstein":
            if dist is None:
                raise ValueError('kind="wasserstein" needs a ground metric dist of shape (S, S)')
            dist = check_distance_matrix(dist, p.size)
        p, v = p.tolist(), v.tolist()
    return worst_case_kernel(p, v, rho, kind, dist)


def _plain_valid(p: Any, v: Any, rho: Any, kind: Any, dist: Any) -> bool:
    """Whether ``worst_case``'s arguments are plainly valid: lists of floats, a float radius, a known kind."""
    if not (type(p) is list and type(v) is list and 0 < len(p) == len(v) and type(rho) is float and rho >= 0.0
            and type(kind) is str and kind in KINDS):
        return False
    if not (all(type(x) is float and x >= 0.0 for x in p) and abs(math.fsum(p) - 1.0) <= 1e-8
            and all(type(x) is float and math.isfinite(x) for x in v)):
        return False
    if kind != "wasserstein":
        return True
    if type(dist) is not np.ndarray or dist.shape != (len(p), len(p)) or dist.dtype.kind != "f":
        return False
    d = dist.tolist()
    return all(math.isfinite(x) and x >= 0.0 and x == d[j][i] and (x == 0.0 or i != j)
               for i, row in enumerate(d) for j, x in enumerate(row))


def robust_expectation(p: np.ndarray, v: np.ndarray, rho: float, kind: Kind, dist: np.ndarray | None = None) -> float:
    """The worst-case expectation ``sigma_B(v) = min_{q in B} q @ v`` (the paper's robust backup).

    ``p``: nominal probabilities (non-negative, summing to 1 within 1e-8); ``v``: values of the
    same length; ``rho >= 0``: the radius (``0`` gives exactly ``p @ v``; a radius covering the
    simplex gives ``min v``); ``kind``: ``"tv"``, ``"chi2"``, ``"wasserstein"`` (needs ``dist``,
    a symmetric non-negative ``(S, S)`` matrix with zero diagonal) or ``"none"`` (nominal).
    """
    check_kind(kind)
    rho = check_radius(rho)
    p, v = _check_p_v(p, v)
    if kind == "wasserstein":
        if dist is None:
            raise ValueError('kind="wasserstein" needs a ground metric dist of shape (S, S)')
        dist = check_distance_matrix(dist, p.size)
    if kind == "none" or rho == 0.0:
        return float(p @ v)
    return worst_case_kernel(p.tolist(), v.tolist(), rho, kind, dist)


def _support_groups(P: np.ndarray, mask: np.ndarray, support: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Group the valid ``(s, a)`` rows by support size: ``(row indices, support state indices)``."""
    S = P.shape[-1]
    rows = np.flatnonzero(mask.reshape(-1))
    flat = P.reshape(-1, S)
    if support == "all":
        return [(rows, np.broadcast_to(np.arange(S), (rows.size, S)))]
    sizes = (flat[rows] > 0).sum(axis=1)
    groups = []
    for k in np.unique(sizes):
        chosen = rows[sizes == k]
        idx = np.stack([np.flatnonzero(flat[r] > 0) for r in chosen])
        groups.append((chosen, idx))
    return groups


def robust_value_iteration(
    P: np.ndarray,
    R: np.ndarray,
    gamma: float,
    kind: Kind,
    rho: float,
    dist: np.ndarray | None = None,
    *,
    action_mask: np.ndarray | None = None,
    terminal: np.ndarray | None = None,
    support: Literal["nominal", "all"] = "nominal",
    tol: float = 1e-10,
    max_iter: int = 100_000,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact tabular robust value iteration ``Q = R + gamma * sigma_{P(s,a)}(V)``, ``V = max_a Q``.

    ``P``: ``(S, A, S)`` nominal transitions; ``R``: ``(S, A)`` expected rewards (no reward
    ambiguity), both finite everywhere (rows of invalid actions are not used); ``gamma`` in
    ``(0, 1]`` (``1`` only when every policy reaches a terminal state);
    ``kind``/``rho``/``dist`` as in :func:`robust_expectation` (``dist``: ``(S, S)`` over states).
    ``action_mask``: ``(S, A)`` booleans, invalid actions get ``Q = -inf``; ``terminal``: ``(S,)``
    booleans, terminal states have value 0.  ``support="nominal"`` (default) restricts each ball to
    the support of ``P[s, a]``, as the tree search does with its observed children; ``"all"`` lets
    the adversary move mass to any state.  Returns ``(V, Q, policy)``.
    """
    check_kind(kind)
    rho = check_radius(rho)
    P = check_array(P, "P", ndim=3, dtype=float)
    if P.shape[0] != P.shape[2]:
        raise ValueError(f"P must have shape (S, A, S), got shape {P.shape}")
    S, A, _ = P.shape
    R = check_array(R, "R", shape=(S, A), dtype=float)
    gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0, inclusive="right")
    check_choice(support, "support", ("nominal", "all"))
    tol = check_scalar(tol, "tol", "real", min=0.0)
    max_iter = check_scalar(max_iter, "max_iter", "int", min=1)
    mask = np.ones((S, A), bool) if action_mask is None else np.asarray(action_mask, bool)
    term = np.zeros(S, bool) if terminal is None else np.asarray(terminal, bool)
    if mask.shape != (S, A) or term.shape != (S,):
        raise ValueError(f"action_mask must be (S, A) = {(S, A)} and terminal (S,) = {(S,)}")
    mask = mask & ~term[:, None]
    if not np.all(mask.any(axis=1) | term):
        raise ValueError("every non-terminal state needs at least one valid action")
    rows = P[mask]
    if np.any(rows < 0) or np.any(np.abs(rows.sum(axis=1) - 1) > 1e-8):
        raise ValueError("each valid row P[s, a] must be a probability vector (sum 1 within 1e-8)")
    if kind == "wasserstein":
        if dist is None:
            raise ValueError('kind="wasserstein" needs a ground metric dist of shape (S, S)')
        dist = check_distance_matrix(dist, S)
    if kind == "none":
        rho = 0.0
    groups = _support_groups(P, mask, support)
    flat_P = P.reshape(S * A, S)
    V = np.zeros(S)
    Q = np.full((S, A), -np.inf)
    flat_Q = Q.reshape(-1)
    for _ in range(max_iter):
        for rows, idx in groups:
            p = np.take_along_axis(flat_P[rows], idx, axis=1)
            v = V[idx]
            if kind == "tv":
                sig = _tv_worst(p, v, rho)
            elif kind == "chi2":
                sig = _chi2_worst(p, v, rho)
            elif kind == "wasserstein":
                sig = w1_kernel(p, v, rho, dist[idx[:, :, None], idx[:, None, :]])
            else:
                sig = np.einsum("ij,ij->i", p, v)
            flat_Q[rows] = R.reshape(-1)[rows] + gamma * sig
        V_new = np.where(term, 0.0, Q.max(axis=1))
        delta = np.max(np.abs(V_new - V))
        V = V_new
        if delta <= tol:
            break
    else:
        raise RuntimeError(f"robust value iteration did not reach tol={tol} in {max_iter} sweeps (last {delta:.3g})")
    policy = np.where(term, -1, Q.argmax(axis=1))
    return V, Q, policy
