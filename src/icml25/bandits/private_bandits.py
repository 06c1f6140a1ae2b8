"""Faster Rates for Private Adversarial Bandits (Asi, Raman & Talwar, ICML 2025, arXiv:2505.21790).

Example
-------
>>> import numpy as np
>>> from icml25.bandits import BernoulliEnv, TsallisINF, pseudo_regret
>>> from icml25.bandits.private_bandits import BatchedPrivateBandit
>>> env = BernoulliEnv([0.25, 0.75, 0.75, 0.75, 0.75], horizon=100_000)
>>> learner = BatchedPrivateBandit(TsallisINF(5), horizon=100_000, epsilon=0.01)   # tau = 100
>>> actions = learner.run(env, seed=0)
>>> pseudo_regret(env, actions) / 100_000 < 0.4          # uniform play loses 0.4 per round
True

Central epsilon-differential privacy for adversarial bandits and bandits with expert advice:

* ``BatchedPrivateBandit`` -- the paper's conversion of ANY bandit algorithm into an epsilon-DP one:
  play the base's arm for a batch of ``tau = ceil(1/eps)`` rounds, release the batch's mean loss
  plus ``Laplace(1 / (tau eps))`` noise to the base.  Regret ``O(sqrt(K T / eps))``.
* ``PerRoundLaplaceBandit`` -- the prior approach (Laplace(1/eps) on every observed loss), tau = 1.
* ``BatchedExpertsAsArms`` -- the same conversion with the N experts as arms: ``O(sqrt(N T / eps))``.
* ``PrivateEXP4`` -- EXP4 on per-round Laplace-noised, clipped losses: ``O(sqrt(K T log N) log(KT) / eps)``.
* ``two_batch_audit`` -- the exact privacy audit: the output distribution of the batched mechanism
  on every pair of neighbouring loss sequences of a 2-arm, 4-round, 2-batch game.

The Laplace scale comes from ``icml25.privacy.calibration.laplace_scale`` (the package's one
calibration helper).  Noise is drawn as floats (research use; not hardened against the
floating-point attack of Mironov 2012); pass ``noise_fn`` to use an audited sampler instead.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import laplace

from icml25.bandits.base import (
    EXP4,
    BanditAlgorithm,
    BernoulliEnv,
    FollowTheLeader,
    LossMatrixEnv,
    check_advice,
    check_loss,
    sample_index,
)
from icml25.privacy.calibration import laplace_scale
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_callable, check_instance, check_scalar, check_sequence

__all__ = [
    "AuditResult",
    "BatchedExpertsAsArms",
    "BatchedPrivateBandit",
    "NoiseFn",
    "PerRoundLaplaceBandit",
    "PrivateEXP4",
    "default_batch_size",
    "laplace_noise",
    "two_batch_audit",
    "two_batch_output_distribution",
]

NoiseFn = Callable[[np.random.Generator, float], float]
"""``noise_fn(rng, scale) -> float``: one draw of zero-mean Laplace noise with the given scale."""


def laplace_noise(rng: np.random.Generator, scale: float) -> float:
    """One ``Laplace(0, scale)`` draw from ``rng`` (a ``numpy.random.Generator``; ``scale`` > 0), the default
    ``noise_fn``."""
    check_instance(rng, "rng", np.random.Generator)
    scale = check_scalar(scale, "scale", "real", min=0.0, inclusive="neither")
    return float(rng.laplace(0.0, scale))


def default_batch_size(epsilon: float) -> int:
    """``tau = max(1, ceil(1 / eps))``: the batch size that makes the batch noise O(1)."""
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    return max(1, math.ceil(1.0 / epsilon - 1e-9))


class BatchedPrivateBandit:
    """Batched Laplace conversion of a bandit algorithm into an epsilon-DP one (the paper's conversion).

    The horizon ``T`` is cut into ``M = ceil(T / tau)`` batches (the last one may be shorter).  In
    batch ``j`` of length ``tau_j`` the learner plays ``a = base.act(rng)`` in every round, then
    feeds the base ``ltilde = (1/tau_j) sum_t l_t(a) + Laplace(1 / (tau_j eps))``.

    Privacy (central eps-DP of the action sequence).  Neighbouring loss sequences differ in one
    round, so they change one batch average by at most ``1/tau_j`` (losses in [0, 1]); Laplace noise
    of scale ``(1/tau_j) / eps`` makes that batch's released value eps-DP; the batches use disjoint
    rounds (parallel composition) and every action is a post-processing of the released values, so
    the whole action sequence is eps-DP.  ``two_batch_audit`` checks this numerically.

    Regret.  The base sees ``M ~ T eps`` rounds of O(1)-variance noise, so a base with regret
    ``sqrt(K M)`` under such noise (``TsallisINF``: shift invariant, accepts negative losses) gives
    regret ``tau sqrt(K M) = O(sqrt(K T / eps))``.

    Use ``act(rng)`` / ``update(arm, loss)`` round by round (the noise of a batch is drawn from the
    generator passed to the ``act`` call that opened the batch), or ``run(env, rng)``, which draws
    a whole batch's losses at once.
    """

    def __init__(
        self,
        base: BanditAlgorithm,
        horizon: int,
        epsilon: float,
        batch_size: int | None = None,
        noise_fn: NoiseFn | None = None,
    ) -> None:
        self.base = check_instance(base, "base", BanditAlgorithm, "a bandit algorithm with n_arms, act(rng), update")
        self.n_arms = base.n_arms
        self.horizon = check_scalar(horizon, "horizon", "int", min=1)
        self.epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
        self.batch_size = (
            default_batch_size(self.epsilon)
            if batch_size is None
            else check_scalar(batch_size, "batch_size", "int", min=1)
        )
        self.n_batches = math.ceil(self.horizon / self.batch_size)
        self.noise_fn = laplace_noise if noise_fn is None else check_callable(noise_fn, "noise_fn")
        self._full_scale = laplace_scale(self.epsilon, sensitivity=1.0 / self.batch_size)
        self.released: list[tuple[int, float]] = []
        self.t = 0
        self._arm = -1
        self._sum = 0.0
        self._rng: np.random.Generator | None = None

    def batch_length(self, j: int) -> int:
        """Length ``tau_j`` of batch ``j`` (0-based); only the last batch may be shorter."""
        j = check_scalar(j, "j", "int", min=0, max=self.n_batches - 1)
        return min(self.batch_size, self.horizon - j * self.batch_size)

    def noise_scale(self, j: int) -> float:
        """Laplace scale of batch ``j``: sensitivity ``1/tau_j`` of the batch mean over ``epsilon``."""
        return self._scale(self.batch_length(j))

    def _scale(self, length: int) -> float:
        if length == self.batch_size:
            return self._full_scale
        return laplace_scale(self.epsilon, sensitivity=1.0 / length)

    def _release(self, arm: int, loss_sum: float, length: int, rng: np.random.Generator) -> None:
        noisy = loss_sum / length + float(self.noise_fn(rng, self._scale(length)))
        self.released.append((arm, noisy))
        self.base.update(arm, noisy)

    def act(self, rng: np.random.Generator) -> int:
        """The arm of round ``t``: a fresh ``base.act(rng)`` when a batch starts, else the batch's arm."""
        if self.t >= self.horizon:
            raise ValueError(f"horizon exceeded: the learner was built for {self.horizon} rounds")
        if self.t % self.batch_size == 0 and self._rng is None:
            self._arm, self._sum, self._rng = int(self.base.act(rng)), 0.0, rng
        return self._arm

    def update(self, arm: int, loss: float) -> None:
        """Record the observed loss in [0, 1] of the batch's arm; release the batch at its last round."""
        if self._rng is None:
            raise ValueError("update() must follow act() in the same round")
        if check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1) != self._arm:
            raise ValueError(f"arm {arm} was not played: this batch plays arm {self._arm}")
        self._sum += check_loss(loss)
        self.t += 1
        j = (self.t - 1) // self.batch_size
        if self.t == min((j + 1) * self.batch_size, self.horizon):
            rng, self._rng = self._rng, None
            self._release(self._arm, self._sum, self.batch_length(j), rng)

    def run(self, env: BernoulliEnv | LossMatrixEnv, seed: Seed = None) -> np.ndarray:
        """Play the whole horizon on ``env`` batch by batch; return the ``(T,)`` actions.

        Same distribution as ``act``/``update`` round by round with the generator ``as_generator(seed)``
        (identical numbers on deterministic environments), but one ``env.sample_sum`` call per batch.
        """
        check_instance(env, "env", (BernoulliEnv, LossMatrixEnv))
        rng = as_generator(seed)
        if self.t != 0:
            raise ValueError("run() needs a fresh learner")
        if (env.n_arms, env.horizon) != (self.n_arms, self.horizon):
            raise ValueError(
                f"environment has {env.n_arms} arms and horizon {env.horizon}; "
                f"the learner {self.n_arms} and {self.horizon}"
            )
        arms = np.empty(self.n_batches, dtype=int)
        for j in range(self.n_batches):
            start = j * self.batch_size
            length = min(self.batch_size, self.horizon - start)
            arms[j] = arm = check_scalar(self.base.act(rng), "the base's arm", "int", min=0, max=self.n_arms - 1)
            self._release(arm, env.sample_sum(arm, start, start + length, rng), length, rng)
        self.t = self.horizon
        return np.repeat(arms, self.batch_size)[: self.horizon]


class PerRoundLaplaceBandit(BatchedPrivateBandit):
    """The prior baseline (Tossou & Dimitrakakis 2017; Agarwal & Singh 2017): Laplace(1/eps) on every loss.

    The batched conversion with ``batch_size = 1``; eps-DP by parallel composition over rounds.
    Regret ``O(sqrt(K T log(KT)) / eps)``, linear once ``eps < 1/sqrt(T)``.
    """

    def __init__(
        self, base: BanditAlgorithm, horizon: int, epsilon: float, noise_fn: NoiseFn | None = None
    ) -> None:
        super().__init__(base, horizon, epsilon, batch_size=1, noise_fn=noise_fn)


class BatchedExpertsAsArms:
    """Private bandits with expert advice by the batched conversion over the N experts as arms.

    In batch ``j`` the base picks an expert ``e``; every round of the batch plays an action drawn
    from ``xi_t^e``; the base receives the noisy batch mean of the observed losses (as in
    ``BatchedPrivateBandit``, hence eps-DP).  Regret ``O(sqrt(N T / eps))``.
    """

    def __init__(
        self,
        base: BanditAlgorithm,
        n_actions: int,
        horizon: int,
        epsilon: float,
        batch_size: int | None = None,
        noise_fn: NoiseFn | None = None,
    ) -> None:
        self.private = BatchedPrivateBandit(base, horizon, epsilon, batch_size=batch_size, noise_fn=noise_fn)
        self.n_experts = base.n_arms
        self.n_actions = check_scalar(n_actions, "n_actions", "int", min=1)
        self._expert = -1
        self._action = -1

    def act(self, rng: np.random.Generator, advice: np.ndarray) -> int:
        """An action drawn from the advice of the batch's expert."""
        advice = check_advice(advice, self.n_experts, self.n_actions)
        self._expert = self.private.act(rng)
        row = advice[self._expert]
        self._action = int(row) if np.ndim(row) == 0 else sample_index(rng, row)
        return self._action

    def update(self, action: int, loss: float) -> None:
        """Record the loss in [0, 1] of the played action (charged to the batch's expert)."""
        if check_scalar(action, "action", "int", min=0, max=self.n_actions - 1) != self._action:
            raise ValueError(f"action {action} was not played this round (played {self._action})")
        self.private.update(self._expert, loss)


class PrivateEXP4:
    """Private EXP4: EXP4 fed ``l_t(I_t) + Laplace(1/eps)``, clipped to ``[-c, 1 + c]``, rescaled to [0, 1].

    Fresh noise every round; each round's loss enters one released value, so the action sequence is
    eps-DP (parallel composition and post-processing).  Default ``clip = ln(K T) / eps`` and
    ``eta = sqrt(2 ln N / (T K))``.  Regret ``O(sqrt(K T log N) log(KT) / eps)``.
    """

    def __init__(
        self,
        n_experts: int,
        n_actions: int,
        horizon: int,
        epsilon: float,
        eta: float | None = None,
        clip: float | None = None,
        noise_fn: NoiseFn | None = None,
    ) -> None:
        self.epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
        horizon = check_scalar(horizon, "horizon", "int", min=1)
        n_actions = check_scalar(n_actions, "n_actions", "int", min=1)
        self.clip = math.log(n_actions * horizon) / self.epsilon if clip is None else clip
        self.exp4 = EXP4(n_experts, n_actions, horizon, eta=eta, clip=self.clip)
        self.n_experts, self.n_actions, self.horizon = self.exp4.n_experts, n_actions, horizon
        self.noise_fn = laplace_noise if noise_fn is None else check_callable(noise_fn, "noise_fn")
        self._rng: np.random.Generator | None = None

    def act(self, rng: np.random.Generator, advice: np.ndarray) -> int:
        """An action from the EXP4 mixture of the advice."""
        action = self.exp4.act(rng, advice)
        self._rng = rng
        return action

    def update(self, action: int, loss: float) -> None:
        """Release the loss in [0, 1] with Laplace(1/eps) noise and feed it to EXP4."""
        if self._rng is None:
            raise ValueError("update() must follow act() in the same round")
        noisy = check_loss(loss) + float(self.noise_fn(self._rng, laplace_scale(self.epsilon)))
        self._rng = None
        self.exp4.update(action, noisy)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of ``two_batch_audit``: the largest ``|log P(s | D) - log P(s | D')|`` over outputs ``s``
    and neighbouring pairs ``(D, D')``, the pair and output attaining it, and the counts examined."""

    epsilon: float
    max_log_ratio: float
    worst_pair: tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]
    worst_output: tuple[int, ...]
    n_sequences: int
    n_pairs: int


def two_batch_output_distribution(
    losses: np.ndarray, epsilon: float, noise_multiplier: float = 1.0, bound: float = 40.0
) -> dict[tuple[int, ...], float]:
    """Exact distribution of the action sequence of the batched conversion on a 2-batch game.

    ``losses`` is a ``(T, K)`` matrix in [0, 1] with even ``T``; the batch size is ``T // 2`` and the
    base is ``FollowTheLeader(K)`` (deterministic, prior 1/2), so the only randomness is the batch-1
    noise ``u * scale`` with ``u ~ Laplace(0, 1)`` (batch 2's noise is released after the last action).
    The actions are a piecewise-constant function of ``u``: its breakpoints are located by bisection
    (to ~1e-15) through the real code path on a grid of spacing 1 over ``[-bound, bound]``, and each
    piece gets its exact Laplace mass (CDF difference).  Returns ``{action sequence: probability}``.
    """
    losses = check_array(losses, "losses", ndim=2, dtype=float, min_len=2)
    if losses.shape[0] % 2:
        raise ValueError(f"losses must be a (T, K) matrix with even T >= 2, got shape {losses.shape}")
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    noise_multiplier = check_scalar(noise_multiplier, "noise_multiplier", "real", min=0.0, inclusive="neither")
    bound = check_scalar(bound, "bound", "real", min=0.0, inclusive="neither")
    horizon, n_arms = losses.shape
    env, rng = LossMatrixEnv(losses), np.random.default_rng(0)  # nothing random is drawn from rng

    def actions_given(u: float) -> tuple[int, ...]:
        draws = iter([u, 0.0])
        learner = BatchedPrivateBandit(
            FollowTheLeader(n_arms),
            horizon,
            epsilon,
            batch_size=horizon // 2,
            noise_fn=lambda rng, scale: noise_multiplier * scale * next(draws),
        )
        return tuple(learner.run(env, rng).tolist())

    grid = np.linspace(-bound, bound, 2 * math.ceil(bound) + 1)
    outputs = [actions_given(float(u)) for u in grid]
    cuts = [-np.inf]
    pieces = [outputs[0]]
    for lo, hi, out_lo, out_hi in zip(grid[:-1], grid[1:], outputs[:-1], outputs[1:], strict=True):
        if out_lo == out_hi:
            continue
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            if actions_given(float(mid)) == out_lo:
                lo = mid
            else:
                hi = mid
        cuts.append(0.5 * (lo + hi))
        pieces.append(out_hi)
    cuts.append(np.inf)
    probs: dict[tuple[int, ...], float] = {}
    for out, a, b in zip(pieces, cuts[:-1], cuts[1:], strict=True):
        probs[out] = probs.get(out, 0.0) + float(laplace.cdf(b) - laplace.cdf(a))
    return probs


def two_batch_audit(
    epsilon: float,
    loss_values: tuple[float, ...] = (0.0, 1.0),
    n_arms: int = 2,
    horizon: int = 4,
    noise_multiplier: float = 1.0,
) -> AuditResult:
    """Exact privacy audit of ``BatchedPrivateBandit`` on a 2-batch game (claim 3 of the reproduction).

    Every loss sequence with entries in ``loss_values`` (``horizon`` rounds, ``n_arms`` arms, batch
    size ``horizon // 2``, deterministic base ``FollowTheLeader`` with prior 1/2) is played through
    the real conversion with the batch-1 noise integrated exactly (Laplace CDF); for every pair of
    sequences differing in one round the log-ratio of the probabilities of each action sequence is
    evaluated.  eps-DP means ``max_log_ratio <= epsilon``.  ``noise_multiplier < 1`` shrinks the
    noise below the calibrated scale (a negative control that must fail the bound).
    """
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    noise_multiplier = check_scalar(noise_multiplier, "noise_multiplier", "real", min=0.0, inclusive="neither")
    horizon = check_scalar(horizon, "horizon", "int", min=2)
    if horizon % 2:
        raise ValueError(f"horizon must be an even integer (two equal batches), got {horizon}")
    n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
    values = tuple(check_sequence(loss_values, "loss_values", min_len=1,
                                  item=lambda v, name: check_scalar(v, name, "real", min=0.0, max=1.0)))
    rows = list(itertools.product(values, repeat=n_arms))
    sequences = list(itertools.product(range(len(rows)), repeat=horizon))
    if len(sequences) > 20_000:
        raise ValueError(
            f"{len(sequences)} loss sequences is too many for an exact audit; use fewer values/arms"
        )
    probs = {  # the default bound 40 leaves out Laplace(0, 1) mass e^-40 ~ 4e-18 per tail
        seq: two_batch_output_distribution(np.array([rows[i] for i in seq]), epsilon, noise_multiplier)
        for seq in sequences
    }
    worst, worst_pair, worst_out, n_pairs = 0.0, None, None, 0
    for seq in sequences:
        for t in range(horizon):
            for other in range(seq[t] + 1, len(rows)):
                neighbour = seq[:t] + (other,) + seq[t + 1 :]
                n_pairs += 1
                p, q = probs[seq], probs[neighbour]
                for out in set(p) | set(q):
                    both = out in p and out in q
                    ratio = abs(math.log(p[out]) - math.log(q[out])) if both else math.inf
                    if worst_pair is None or ratio > worst:
                        worst, worst_out = ratio, out
                        worst_pair = (
                            tuple(rows[i] for i in seq),
                            tuple(rows[i] for i in neighbour),
                        )
    return AuditResult(epsilon, worst, worst_pair, worst_out, len(sequences), n_pairs)
