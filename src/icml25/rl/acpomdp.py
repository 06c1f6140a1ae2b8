"""Tabular tools for asymmetric constrained POMDPs (ACPOMDPs, Huang et al., ICML 2025, arXiv:2508.02159, Sec. 3).

- :func:`exact_policy_eval`: the value of a policy on the hidden-state MDP by one linear solve; for a reactive
  (observation-only) policy the value of a belief ``b`` is then ``sum_s b(s) V(s)`` exactly;
- :func:`td0_evaluate`: tabular TD(0) over any integer key, so the same transitions train a symmetric critic
  (key = observation) and an asymmetric one (key = (observation, state)).
"""

from __future__ import annotations

import numpy as np

from icml25.utils.validation import check_array, check_scalar

__all__ = ["exact_policy_eval", "td0_evaluate"]


def exact_policy_eval(P: np.ndarray, signal: np.ndarray, terminal: np.ndarray, policy: np.ndarray,
                      gamma: float = 0.99) -> np.ndarray:
    """``V(s) = sum_a pi(a | s) sum_s' P[a, s, s'] (signal[a, s, s'] + gamma V(s'))`` with ``V = 0`` on terminal
    states, solved exactly.  ``P`` and ``signal`` are ``[A, S, S]`` (``signal`` the reward or the cost),
    ``terminal`` ``[S]`` bool, ``policy`` ``[S, A]`` rows summing to 1 (a reactive policy lifted to states)."""
    P = check_array(P, "P", ndim=3, dtype=float)
    n_actions, n_states = P.shape[:2]
    if P.shape != (n_actions, n_states, n_states) or n_states == 0 or n_actions == 0:
        raise ValueError(f"P must have shape [A, S, S], got {P.shape}")
    if np.any(P < 0) or not np.allclose(P.sum(-1), 1.0):
        raise ValueError("P must hold transition probabilities (rows of P[a, s] sum to 1)")
    signal = check_array(signal, "signal", dtype=float, shape=P.shape)
    terminal = check_array(terminal, "terminal", ndim=1, dtype=None, shape=(n_states,)).astype(bool)
    policy = check_array(policy, "policy", dtype=float, shape=(n_states, n_actions))
    if np.any(policy < 0) or not np.allclose(policy.sum(-1), 1.0):
        raise ValueError("policy must hold action probabilities (rows summing to 1)")
    gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0, inclusive="left")
    P_pi = np.einsum("sa,ast->st", policy, P)
    r_pi = np.einsum("sa,ast,ast->s", policy, P, signal)
    live = ~terminal
    P_pi[terminal] = 0.0
    r_pi[terminal] = 0.0
    A = np.eye(n_states) - gamma * P_pi * live[None, :]
    return np.linalg.solve(A, r_pi)


def td0_evaluate(keys: np.ndarray, signals: np.ndarray, next_keys: np.ndarray, dones: np.ndarray, n_keys: int,
                 gamma: float = 0.99) -> np.ndarray:
    """Tabular TD(0) with sample-average step sizes (``1 / visits``) over one pass of transitions
    ``(key, signal, next_key, done)``; returns the value table ``[n_keys]`` (0 where a key was never visited)."""
    keys = check_array(keys, "keys", ndim=1, dtype=None, min_len=1)
    n = len(keys)
    signals = check_array(signals, "signals", dtype=float, shape=(n,))
    next_keys = check_array(next_keys, "next_keys", dtype=None, shape=(n,))
    dones = check_array(dones, "dones", dtype=None, shape=(n,)).astype(bool)
    n_keys = check_scalar(n_keys, "n_keys", "int", min=1)
    gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0)
    for name, k in (("keys", keys), ("next_keys", next_keys)):
        if k.dtype.kind not in "iu" or k.min() < 0 or k.max() >= n_keys:
            raise ValueError(f"{name} must be integers in [0, n_keys), got range [{k.min()}, {k.max()}]")
    V, visits = np.zeros(n_keys), np.zeros(n_keys)
    for k, c, k2, d in zip(keys, signals, next_keys, dones, strict=True):
        visits[k] += 1
        target = c + (0.0 if d else gamma * V[k2])
        V[k] += (target - V[k]) / visits[k]
    return V
