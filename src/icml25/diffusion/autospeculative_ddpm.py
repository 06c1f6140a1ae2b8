"""Autospeculative decoding (ASD) of DDPMs through stochastic localization.

Hu, Das, Sadigh & Anari, "Diffusion Models are Secretly Exchangeable: Parallelizing DDPMs via
Autospeculation", ICML 2025, arXiv 2505.03983. Official code: none was found; this module follows
the paper's Algorithm (Sec. 4).

A DDPM sampled as stochastic localization (:mod:`icml25.diffusion.sl`) is the chain
``y_{k+1} = y_k + δ_k·m(y_k, t_k) + sqrt(δ_k)·ξ_k`` on a grid ``0 = t_0 < ... < t_K`` (the *target
chain*, :func:`sl_sample_sequential`). Its increments are exchangeable, so the current posterior
mean is a free draft of future drifts: ASD drafts ``L`` increments with ``m(y_i, t_i)``, evaluates
``m`` at all drafted states in one batched call, and accepts increments left to right with the
density ratio of the target and draft Gaussians; on the first rejection it emits the reflection of
the drafted increment (reflection maximal coupling), so every emitted increment has the target law
and ASD samples have exactly the sequential sampler's distribution, for any window.

Cost is counted as the paper does: ``depth`` is the number of sequential network-call rounds (a
batched call of many inputs counts once), ``nfe`` the number of network evaluations.

>>> import torch
>>> from icml25.diffusion import GaussianMixture
>>> gm = GaussianMixture.ring(8, std=0.1)
>>> grid = uniform_sl_grid(256, 1000.0)
>>> x, stats = asd_sample(gm.posterior_mean, grid, (64, 2), seed=0)
>>> x.shape, bool(stats.depth.float().mean() < 256)
(torch.Size([64, 2]), True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from icml25.diffusion.schedules import check_alphas_cumprod, per_sample
from icml25.diffusion.sl import ddpm_to_sl
from icml25.utils import check_callable, check_choice, check_scalar, check_tensor
from icml25.utils.random import Seed, torch_generator

__all__ = ["ASDStats", "asd_sample", "ddpm_sl_grid", "reflection_coupling", "sl_sample_sequential",
           "uniform_sl_grid"]

MeanFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
OUTPUTS = ("mean", "y_over_t")


@dataclass(frozen=True)
class ASDStats:
    """Cost and acceptance of one batch of chains.

    ``depth`` (B,): sequential network-call rounds of each chain (a batched call counts once; the
    first mean ``m(y_0, t_0)`` and, for ``output="mean"``, the output mean ``m(y_K, t_K)`` included);
    ``nfe`` (B,): its network evaluations; ``accepted`` (B,): drafted increments accepted without
    reflection; ``proposed`` (B,): drafted increments tested (the first of each round is always
    accepted and not tested); ``accepted_per_round``: per lockstep round, the increments emitted by
    each chain; ``rounds``: lockstep rounds of the whole batch; ``sequential_depth``: the depth of
    :func:`sl_sample_sequential` on the same grid (``K``, plus 1 for the output mean).
    """

    depth: torch.Tensor
    nfe: torch.Tensor
    accepted: torch.Tensor
    proposed: torch.Tensor
    accepted_per_round: tuple[torch.Tensor, ...]
    rounds: int
    sequential_depth: int

    @property
    def speedup(self) -> torch.Tensor:
        """Per chain, the sequential sampler's depth over this depth (the paper's parallel speedup)."""
        return self.sequential_depth / self.depth.to(torch.float64)

    @property
    def acceptance_rate(self) -> float:
        """Accepted over tested drafted increments (the always-accepted first increment excluded)."""
        tested = int(self.proposed.sum())
        return float(self.accepted.sum()) / tested if tested else 1.0


def uniform_sl_grid(n_steps: int, horizon: float) -> torch.Tensor:
    """``n_steps + 1`` equally spaced SL times ``0, T/K, ..., T`` (float64)."""
    n_steps = check_scalar(n_steps, "n_steps", "int", min=1)
    horizon = check_scalar(horizon, "horizon", "real", min=0.0, inclusive="neither")
    return torch.linspace(0.0, horizon, n_steps + 1, dtype=torch.float64)


def ddpm_sl_grid(alphas_cumprod: torch.Tensor, timesteps: torch.Tensor) -> torch.Tensor:
    """The SL grid of a DDPM sampler visiting ``timesteps`` (descending): ``0`` then ``ᾱ/(1-ᾱ)`` ascending."""
    abar = check_alphas_cumprod(alphas_cumprod)
    check_tensor(timesteps, "timesteps", ndim=1)
    if timesteps.is_floating_point() or timesteps.numel() < 1:
        raise ValueError(f"timesteps must be a non-empty 1-d tensor of integer timesteps, got {timesteps}")
    if bool(((timesteps < 0) | (timesteps >= abar.numel())).any()) or bool((timesteps[1:] >= timesteps[:-1]).any()):
        raise ValueError(f"timesteps must be strictly decreasing in [0, {abar.numel() - 1}], got {timesteps.tolist()}")
    return torch.cat([torch.zeros(1, dtype=torch.float64), ddpm_to_sl(abar[timesteps])])


def _check_grid(t_grid: Any) -> torch.Tensor:
    check_tensor(t_grid, "t_grid", ndim=1, finite=True)
    grid = t_grid.detach().to(torch.float64)
    if grid.numel() < 2:
        raise ValueError(f"t_grid must have at least 2 times (K >= 1 steps), got {grid.numel()}")
    if float(grid[0]) < 0 or bool((grid[1:] <= grid[:-1]).any()):
        raise ValueError("t_grid must be strictly increasing and start at t >= 0")
    return grid


def _check_shape(shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list, torch.Size)) or len(shape) < 2:
        raise TypeError(f"shape must be a tuple (n_chains, *dims) of at least 2 ints, got {shape!r}")
    return tuple(check_scalar(s, f"shape[{i}]", "int", min=1) for i, s in enumerate(shape))


def _start(y0: torch.Tensor | None, grid: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    if y0 is None:
        if float(grid[0]) != 0.0:
            raise ValueError("y0 is needed when t_grid does not start at 0 (y_0 = 0 only at SL time 0)")
        return torch.zeros(shape, dtype=torch.float64)
    check_tensor(y0, "y0", finite=True, shape=shape)
    return y0.detach().to(torch.float64).clone()


def _mean(mean_fn: MeanFn, y: torch.Tensor, t: torch.Tensor, steps: torch.Tensor, max_batch: int) -> torch.Tensor:
    """``m(y, t)`` in calls of at most ``max_batch`` inputs; a non-finite mean names its grid step."""
    outs = []
    for lo in range(0, y.shape[0], max_batch):
        out = mean_fn(y[lo:lo + max_batch], t[lo:lo + max_batch])
        if not isinstance(out, torch.Tensor) or out.shape != y[lo:lo + max_batch].shape:
            raise ValueError(f"mean_fn must return a tensor shaped like y {tuple(y[lo:lo + max_batch].shape)}, "
                             f"got {getattr(out, 'shape', type(out).__name__)}")
        outs.append(out.to(torch.float64))
    m = torch.cat(outs) if outs else y.new_zeros(y.shape)
    bad = ~torch.isfinite(m.flatten(1)).all(dim=1)
    if bool(bad.any()):
        raise ValueError(f"mean_fn returned NaN or inf at grid step {int(steps[bad][0])}")
    return m


def _validate(mean_fn, t_grid, shape, output, max_batch):
    check_callable(mean_fn, "mean_fn")
    grid = _check_grid(t_grid)
    shape = _check_shape(shape)
    check_choice(output, "output", OUTPUTS)
    max_batch = check_scalar(max_batch, "max_batch", "int", min=1)
    return grid, shape, max_batch


@torch.no_grad()
def sl_sample_sequential(mean_fn: MeanFn, t_grid: torch.Tensor, shape: tuple[int, ...], seed: Seed = None,
                         y0: torch.Tensor | None = None, output: str = "mean",
                         max_batch: int = 4096) -> tuple[torch.Tensor, ASDStats]:
    """The target chain: ``K`` sequential Euler-Maruyama steps of ``dy = m(y, t) dt + dB`` (float64).

    ``mean_fn(y, t)`` is the posterior mean for a batch ``y`` (N, *dims) at SL times ``t`` (N,);
    ``shape = (n_chains, *dims)``. Returns ``m(y_K, t_K)`` (``output="mean"``) or ``y_K / t_K``, and
    the cost: depth and evaluations ``K`` (plus 1 for the output mean).
    """
    grid, shape, max_batch = _validate(mean_fn, t_grid, shape, output, max_batch)
    g = torch_generator(seed)
    y = _start(y0, grid, shape)
    n, K = shape[0], grid.numel() - 1
    delta = grid.diff()
    m = None
    for k in range(K):
        m = _mean(mean_fn, y, grid[k].expand(n), torch.full((n,), k), max_batch)
        xi = torch.randn(shape, generator=g, dtype=torch.float64)
        y = y + delta[k] * m + delta[k].sqrt() * xi
    extra = int(output == "mean")
    x = y / grid[-1] if output == "y_over_t" else _mean(mean_fn, y, grid[-1].expand(n), torch.full((n,), K), max_batch)
    full = torch.full((n,), K + extra, dtype=torch.int64)
    zeros = torch.zeros(n, dtype=torch.int64)
    return x, ASDStats(full, full.clone(), zeros, zeros, tuple(torch.ones(n, dtype=torch.int64) for _ in range(K)),
                       K, K + extra)


def reflection_coupling(delta_hat: torch.Tensor, mu_prop: torch.Tensor, mu_tgt: torch.Tensor, step: Any,
                        u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One accept/reject of a drafted increment under the reflection maximal coupling (per row).

    ``delta_hat ~ N(step·mu_prop, step·I)`` is accepted with probability
    ``min(1, N(delta_hat; step·mu_tgt, step·I) / N(delta_hat; step·mu_prop, step·I))`` (``u`` uniform);
    otherwise it is replaced by its reflection ``step·mu_tgt + sqrt(step)·(z - 2(e·z)e)`` with
    ``z = (delta_hat - step·mu_prop)/sqrt(step)`` and ``e`` the unit vector along ``mu_tgt - mu_prop``.
    Either way the returned increment has the law ``N(step·mu_tgt, step·I)``. Rows are flattened
    samples (B, ...); returns ``(increment, accepted)``.
    """
    check_tensor(delta_hat, "delta_hat", floating=True, finite=True)
    if delta_hat.ndim < 1:
        raise ValueError("delta_hat must have a batch axis")
    for name, value in (("mu_prop", mu_prop), ("mu_tgt", mu_tgt)):
        check_tensor(value, name, finite=True)
        if value.shape != delta_hat.shape:
            raise ValueError(f"{name} must have the shape of delta_hat {tuple(delta_hat.shape)}, "
                             f"got {tuple(value.shape)}")
    check_tensor(u, "u", finite=True, ndim=1)
    if u.numel() != delta_hat.shape[0]:
        raise ValueError(f"u must hold one uniform per row of delta_hat ({delta_hat.shape[0]}), got {u.numel()}")
    step_t = per_sample(step, "step", delta_hat.shape[0], high=float("inf"), high_open=True, of="delta_hat")
    return _couple(delta_hat.flatten(1).double(), mu_prop.flatten(1).double(), mu_tgt.flatten(1).double(),
                   step_t, u.double(), delta_hat.shape)


def _couple(dh, mp, mt, step, u, shape):
    z = (dh - step[:, None] * mp) / step.sqrt()[:, None]
    diff = mt - mp
    log_ratio = step.sqrt() * (z * diff).sum(1) - 0.5 * step * (diff**2).sum(1)
    accept = torch.log(u) < log_ratio.clamp(max=0.0)
    accept |= (diff == 0).all(1)
    norm = diff.norm(dim=1, keepdim=True)
    e = diff / torch.where(norm > 0, norm, torch.ones_like(norm))
    z_ref = z - 2 * (e * z).sum(1, keepdim=True) * e
    reflected = step[:, None] * mt + step.sqrt()[:, None] * z_ref
    out = torch.where(accept[:, None], dh, reflected)
    return out.reshape(shape), accept


@torch.no_grad()
def asd_sample(mean_fn: MeanFn, t_grid: torch.Tensor, shape: tuple[int, ...], window: int | None = None,
               max_batch: int = 4096, seed: Seed = None, y0: torch.Tensor | None = None,
               output: str = "mean") -> tuple[torch.Tensor, ASDStats]:
    """Autospeculative sampling of the SL chain of :func:`sl_sample_sequential`, exactly in law.

    Each lockstep round, every unfinished chain drafts ``L = min(window, steps left)`` increments
    with its current mean (``window=None``: to the end of the chain), the means at all drafted states
    of all chains are evaluated in one batched call (split into calls of at most ``max_batch``
    inputs, a memory knob that changes neither the samples nor the depth), and each chain accepts
    increments left to right; its first rejection is reflected and ends its round. Chains are
    ragged: each keeps its own position. The random draws depend only on ``seed``, ``shape``,
    ``window`` and the grid.
    """
    grid, shape, max_batch = _validate(mean_fn, t_grid, shape, output, max_batch)
    if window is not None:
        window = check_scalar(window, "window", "int", min=1)
    g = torch_generator(seed)
    n, K = shape[0], grid.numel() - 1
    dims = shape[1:]
    delta = grid.diff()
    y = _start(y0, grid, shape)
    pos = torch.zeros(n, dtype=torch.int64)
    depth = torch.ones(n, dtype=torch.int64)
    nfe = torch.full((n,), 1, dtype=torch.int64)
    accepted = torch.zeros(n, dtype=torch.int64)
    proposed = torch.zeros(n, dtype=torch.int64)
    m = _mean(mean_fn, y, grid[0].expand(n), pos, max_batch)
    stale = torch.zeros(n, dtype=torch.bool)  # chains whose mean must be recomputed before drafting
    per_round, rounds = [], 0
    while bool((pos < K).any()):
        rounds += 1
        active = torch.nonzero(pos < K).squeeze(1)
        need = active[stale[active]]
        if need.numel():
            m[need] = _mean(mean_fn, y[need], grid[pos[need]], pos[need], max_batch)
            depth[need] += 1
            nfe[need] += 1
            stale[need] = False
        left = K - pos[active]
        length = left if window is None else left.clamp(max=window)
        L = int(length.max())
        a = active.numel()
        xi = torch.randn((a, L, *dims), generator=g, dtype=torch.float64)
        u = torch.rand((a, L), generator=g, dtype=torch.float64)
        j = torch.arange(L)
        valid = j[None, :] < length[:, None]
        steps = (pos[active][:, None] + j[None, :]).clamp(max=K - 1)
        dt = delta[steps]  # (a, L)
        expand = (a, L) + (1,) * len(dims)
        m_a = m[active][:, None]
        incr = dt.reshape(expand) * m_a + dt.sqrt().reshape(expand) * xi
        states = y[active][:, None] + incr.cumsum(dim=1)  # drafted y_{i+1} .. y_{i+L}
        flat = valid.reshape(-1)
        ver_steps = (steps + 1).reshape(-1)[flat]
        verified = torch.zeros_like(states)
        verified.reshape(a * L, *dims)[flat] = _mean(mean_fn, states.reshape(a * L, *dims)[flat], grid[ver_steps],
                                                     ver_steps, max_batch)
        depth[active] += 1
        nfe[active] += length
        targets = torch.cat([m_a, verified[:, :-1]], dim=1)  # target mean of increment j: m at y_{i+j}
        test = valid.clone()
        test[:, 0] = False
        out, ok = _couple(incr.reshape(a * L, -1), m_a.expand(-1, L, *dims).reshape(a * L, -1),
                          targets.reshape(a * L, -1), dt.reshape(-1), u.reshape(-1), (a * L, *dims))
        ok = ok.reshape(a, L) | ~test
        first_bad = torch.where(valid & ~ok, j[None, :].expand(a, L), torch.full((a, L), L)).min(dim=1).values
        rejected = first_bad < length
        moved = torch.where(rejected, first_bad + 1, length)
        accepted[active] += torch.where(rejected, first_bad - 1, length - 1).clamp(min=0)
        proposed[active] += torch.where(rejected, first_bad, length - 1)
        last = moved - 1
        rows = torch.arange(a)
        base = torch.where((last > 0)[:, None].reshape(a, *([1] * len(dims))),
                           states[rows, (last - 1).clamp(min=0)], y[active])
        step_out = out.reshape(a, L, *dims)[rows, last]
        y[active] = torch.where(rejected.reshape(a, *([1] * len(dims))), base + step_out, states[rows, last])
        m[active] = torch.where(rejected.reshape(a, *([1] * len(dims))), m[active], verified[rows, last])
        stale[active] = rejected
        pos[active] += moved
        round_counts = torch.zeros(n, dtype=torch.int64)
        round_counts[active] = moved
        per_round.append(round_counts)
    if output == "y_over_t":
        return y / grid[-1], ASDStats(depth, nfe, accepted, proposed, tuple(per_round), rounds, K)
    if bool(stale.any()):  # chains whose last increment was reflected need the output mean
        m[stale] = _mean(mean_fn, y[stale], grid[-1].expand(int(stale.sum())), torch.full((int(stale.sum()),), K),
                         max_batch)
        depth[stale] += 1
        nfe[stale] += 1
    return m, ASDStats(depth, nfe, accepted, proposed, tuple(per_round), rounds, K + 1)
