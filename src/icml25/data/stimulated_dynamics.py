"""Simulated neural population dynamics under perturbation (offline, seeded).

The data of the iSSM paper (Nejatbakhsh & Wang, ICML 2025) and of its official code
(github.com/amin-nejat/issm, ``utils.stimulation_protocol`` and ``simulations.py``):

- ``stimulation_protocol``: pulses of random sign, one stimulated latent at a time.
- ``simulate_linear_latent``: a linear latent system ``x_t = M x_{t-1}`` seen through a fixed random
  tanh MLP with ``M = 0.98 Rot(0.1)`` (the small ground truth of the reproduction).
- ``simulate_dynamic_attractor``: the "motor cortex" model (a fast radius and a rotating phase).

In both simulators a stimulation is an intervention: a stimulated latent is *set* to the stimulus
and does not follow its dynamics for that step, ``x_t = m_t * f(x_{t-1}) + s_t`` with
``m_t = 1[s_t == 0]`` elementwise.  Arrays are batch-first: ``u`` is ``(K, T, D)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar

__all__ = [
    "rotation_transition",
    "simulate_dynamic_attractor",
    "simulate_linear_latent",
    "stimulation_protocol",
    "stimulation_trials",
]


def stimulation_protocol(
    n_steps: int,
    n_latent: int,
    stimulated: Sequence[int] | None = None,
    amplitude: float | Sequence[float] = 1.0,
    stim_d: float = 1.0,
    rest_d: float = 1.0,
    repetition: int = 5,
    sigma: float = 0.5,
    seed: Seed = None,
) -> np.ndarray:
    """One trial's stimulation, shape ``(n_steps, n_latent)``; zero where nothing is stimulated.

    As in the official ``stimulation_protocol``: the window is cut into ``repetition *
    len(stimulated)`` equal slots, and each stimulated latent takes its turn; a slot is a rest of
    relative length ``rest_d`` followed by a pulse of relative length ``stim_d`` with a random sign,
    ``+-amplitude[i]``.  (The official code also rescales the durations so that all pulses fit the
    window.)  Every nonzero entry then gets ``N(0, sigma^2)`` jitter.  ``amplitude=0`` gives the
    purely observational regime (all zeros).
    """
    n_steps = check_scalar(n_steps, "n_steps", "int", min=1)
    n_latent = check_scalar(n_latent, "n_latent", "int", min=1)
    repetition = check_scalar(repetition, "repetition", "int", min=0)
    stim_d = check_scalar(stim_d, "stim_d", "real", min=0.0, inclusive="neither")
    rest_d, sigma = (check_scalar(v, n, "real", min=0.0) for n, v in (("rest_d", rest_d), ("sigma", sigma)))
    targets = list(range(n_latent)) if stimulated is None else [int(i) for i in stimulated]
    if not targets or len(set(targets)) != len(targets) or not all(0 <= i < n_latent for i in targets):
        raise ValueError(f"stimulated must be distinct latent indices in [0, {n_latent}), got {stimulated!r}")
    amp = check_array(amplitude, "amplitude", ndim=(0, 1), dtype=float)
    if amp.ndim == 0:
        amp = np.full(n_latent, float(amp))
    elif amp.shape != (n_latent,):
        raise ValueError(f"amplitude must be a number or have length n_latent={n_latent}, got shape {amp.shape}")
    if np.any(amp < 0):
        raise ValueError(f"amplitude must be >= 0, got {amplitude!r}")
    rng = as_generator(seed)
    u = np.zeros((n_steps, n_latent))
    n_slots = repetition * len(targets)
    if n_slots == 0:
        return u
    edges = np.linspace(0.0, n_steps, n_slots + 1)
    for slot in range(n_slots):
        i = targets[slot % len(targets)]
        start = edges[slot] + (edges[slot + 1] - edges[slot]) * rest_d / (stim_d + rest_d)
        lo, hi = int(round(start)), int(round(edges[slot + 1]))
        u[lo:max(hi, lo + 1), i] = rng.choice((-1.0, 1.0)) * amp[i]
    nonzero = u != 0
    u[nonzero] += sigma * rng.standard_normal(int(nonzero.sum()))
    return u


def stimulation_trials(n_trials: int, n_steps: int, n_latent: int, seed: Seed = None,
                       **protocol: object) -> np.ndarray:
    """``n_trials`` independent draws of ``stimulation_protocol`` (new signs and jitter), ``(K, T, D)``."""
    n_trials = check_scalar(n_trials, "n_trials", "int", min=1)
    rng = as_generator(seed)
    return np.stack([stimulation_protocol(n_steps, n_latent, seed=rng, **protocol) for _ in range(n_trials)])


def _check_inputs(u: np.ndarray | None, K: int, T: int, D: int) -> np.ndarray:
    if u is None:
        return np.zeros((K, T, D))
    u = check_array(u, "u", dtype=float)
    if u.ndim == 2:
        u = np.broadcast_to(u, (K, *u.shape))
    if u.shape != (K, T, D):
        raise ValueError(f"u must have shape (T, D) = ({T}, {D}) or (K, T, D) = ({K}, {T}, {D}), got {u.shape}")
    return u


def rotation_transition(D: int = 2, theta: float = 0.1, decay: float = 0.98) -> np.ndarray:
    """``decay * R`` with ``R`` a rotation by ``theta`` in the plane of the first two latents (identity elsewhere)."""
    D = check_scalar(D, "D", "int", min=2)
    M = np.eye(D)
    c, s = np.cos(theta), np.sin(theta)
    M[:2, :2] = [[c, -s], [s, c]]
    return decay * M


def simulate_linear_latent(
    K: int,
    T: int,
    D: int = 2,
    N: int = 10,
    dt: float = 0.05,
    u: np.ndarray | None = None,
    *,
    transition: np.ndarray | None = None,
    hidden: int = 32,
    obs_noise: float = 0.05,
    process_noise: float = 0.0,
    x0_scale: float = 0.01,
    seed: Seed = 0,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A linear latent system under interventions, observed through a fixed random 2-layer tanh MLP.

    ``x_1 = x0_scale * N(0, I)`` (clamped where ``u_1 != 0``), then
    ``x_t = m_t * (M x_{t-1} + process_noise * eps_t) + u_t`` with ``m_t = 1[u_t == 0]``;
    ``y_t = W_2 tanh(W_1 x_t + b_1) + b_2 + obs_noise * N(0, I)``.  ``M`` defaults to
    ``rotation_transition(D)``; the continuous-time matrix of the iSSM parametrisation is
    ``A = (M - (1 - dt) I) / dt``.  ``u`` is ``(K, T, D)`` or one ``(T, D)`` protocol for all trials.

    Returns ``(x, y, truth)`` with ``x`` ``(K, T, D)``, ``y`` ``(K, T, N)`` and ``truth`` holding
    ``M``, ``A``, ``W1``, ``b1``, ``W2``, ``b2`` and the noiseless ``y_mean``.  The emission weights
    are drawn first from the generator, so the same seed gives the same emission for any ``K``, ``T``, ``u``.
    """
    K, T, D, N, hidden = (check_scalar(v, n, "int", min=1)
                          for n, v in (("K", K), ("T", T), ("D", D), ("N", N), ("hidden", hidden)))
    dt = check_scalar(dt, "dt", "real", min=0.0, max=1.0, inclusive="neither")
    obs_noise, process_noise, x0_scale = (
        check_scalar(v, n, "real", min=0.0) for n, v in (("obs_noise", obs_noise), ("process_noise", process_noise),
                                                         ("x0_scale", x0_scale)))
    if transition is None:
        transition = rotation_transition(D) if D >= 2 else np.full((1, 1), 0.98)
    M = check_array(transition, "transition", ndim=2, dtype=float)
    if M.shape != (D, D):
        raise ValueError(f"transition must have shape (D, D) = ({D}, {D}), got {M.shape}")
    u = _check_inputs(u, K, T, D)
    rng = as_generator(seed)
    W1 = rng.standard_normal((hidden, D))
    b1 = 0.5 * rng.standard_normal(hidden)
    W2 = rng.standard_normal((N, hidden)) / np.sqrt(hidden)
    b2 = 0.1 * rng.standard_normal(N)
    x = np.zeros((K, T, D))
    keep = u == 0
    x[:, 0] = keep[:, 0] * x0_scale * rng.standard_normal((K, D)) + u[:, 0]
    for t in range(1, T):
        step = x[:, t - 1] @ M.T + process_noise * rng.standard_normal((K, D))
        x[:, t] = keep[:, t] * step + u[:, t]
    y_mean = np.tanh(x @ W1.T + b1) @ W2.T + b2
    y = y_mean + obs_noise * rng.standard_normal(y_mean.shape)
    truth = {"M": M, "A": (M - (1.0 - dt) * np.eye(D)) / dt, "W1": W1, "b1": b1, "W2": W2, "b2": b2,
             "y_mean": y_mean}
    return x, y, truth


def simulate_dynamic_attractor(
    K: int,
    T: float = 10.0,
    dt: float = 0.05,
    u: np.ndarray | None = None,
    *,
    a1: float = -20.0,
    a2: float = 1.2,
    sigma: float = 0.0,
    x0_scale: float = 0.01,
    seed: Seed = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The official ``DynamicAttractor`` "motor cortex" model, Euler-integrated under interventions.

    ``dx1/dt = a1 x1`` and ``dx2/dt = a2 (1 - x1)`` (a radius that settles fast and a phase that
    rotates at rate ``a2``), ``x_t = m_t * (x_{t-1} + dt (f(x_{t-1}) + sigma eps)) + u_t``, observed
    as ``y = ((1 - x1) cos x2, (1 - x1) sin x2)`` without noise (as in the official demo).  ``T`` is
    in time units, so there are ``round(T / dt)`` steps.  Returns ``x`` and ``y``, both ``(K, steps, 2)``.
    """
    K = check_scalar(K, "K", "int", min=1)
    dt = check_scalar(dt, "dt", "real", min=0.0, max=1.0, inclusive="neither")
    T = check_scalar(T, "T", "real", min=dt)
    sigma, x0_scale = check_scalar(sigma, "sigma", "real", min=0.0), check_scalar(x0_scale, "x0_scale", "real", min=0.0)
    steps = int(round(T / dt))
    u = _check_inputs(u, K, steps, 2)
    rng = as_generator(seed)
    x = np.zeros((K, steps, 2))
    keep = u == 0
    x[:, 0] = keep[:, 0] * x0_scale * rng.standard_normal((K, 2)) + u[:, 0]
    for t in range(1, steps):
        prev = x[:, t - 1]
        drift = np.stack([a1 * prev[:, 0], a2 * (1.0 - prev[:, 0])], axis=-1)
        step = prev + dt * (drift + sigma * rng.standard_normal((K, 2)))
        x[:, t] = keep[:, t] * step + u[:, t]
    radius = 1.0 - x[..., 0]
    y = np.stack([radius * np.cos(x[..., 1]), radius * np.sin(x[..., 1])], axis=-1)
    return x, y
