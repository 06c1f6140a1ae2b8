"""The bandit protocol of ``icml25.bandits``: base algorithms, environments and regret helpers.

Conventions (shared by every bandit module of the package):

* losses are minimised and lie in [0, 1] (Vowpal Wabbit / adversarial-bandit convention);
* an algorithm exposes ``act(rng) -> arm`` and ``update(arm, loss)``; every random draw comes
  from the ``numpy.random.Generator`` passed to ``act`` (the runners make it from their ``seed``),
  so the same seed gives the same run;
* an expert-advice algorithm exposes ``act(rng, advice) -> action`` and ``update(action, loss)``,
  where ``advice`` is an ``(N, K)`` array of action distributions or an ``(N,)`` array of
  recommended actions (deterministic advice);
* environments are oblivious: the loss sequence does not depend on the learner's actions.

Algorithms that tolerate noisy, unbounded losses (``TsallisINF``, ``FollowTheLeader``, and
``EXP3``/``EXP4`` with ``clip``) accept any finite loss; the others require losses in [0, 1].

Example
-------
>>> import numpy as np
>>> from icml25.bandits.base import BernoulliEnv, TsallisINF, pseudo_regret, run_bandit
>>> env = BernoulliEnv([0.25, 0.75, 0.75], horizon=2000)
>>> actions = run_bandit(TsallisINF(3), env, seed=0)
>>> pseudo_regret(env, actions) < 0.5 * 2000 * (0.75 - 0.25)
True
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_instance, check_probability_vector, check_scalar

__all__ = [
    "EXP3",
    "EXP4",
    "UCB",
    "BanditAlgorithm",
    "check_advice",
    "BernoulliEnv",
    "ExpertAdviceEnv",
    "ExpertAlgorithm",
    "FixedArm",
    "FollowTheLeader",
    "LossMatrixEnv",
    "TsallisINF",
    "Uniform",
    "check_loss",
    "expert_regret",
    "pseudo_regret",
    "regret",
    "regret_curve",
    "run_bandit",
    "run_experts",
    "sample_index",
    "switching_means",
]


# ----------------------------------------------------------------------------- protocols
@runtime_checkable
class BanditAlgorithm(Protocol):
    """A K-armed bandit learner: ``act(rng) -> arm`` then ``update(arm, loss)`` each round."""

    n_arms: int

    def act(self, rng: np.random.Generator) -> int:
        """The arm to play this round, every random draw from ``rng``."""
        raise NotImplementedError

    def update(self, arm: int, loss: float) -> None:
        """Feed back the loss of the played arm."""
        raise NotImplementedError


@runtime_checkable
class ExpertAlgorithm(Protocol):
    """A bandit-with-expert-advice learner: ``act(rng, advice) -> action``, ``update(action, loss)``."""

    n_experts: int
    n_actions: int

    def act(self, rng: np.random.Generator, advice: np.ndarray) -> int:
        """The action to play given this round's ``advice``, every random draw from ``rng``."""
        raise NotImplementedError

    def update(self, action: int, loss: float) -> None:
        """Feed back the loss of the played action."""
        raise NotImplementedError


# ----------------------------------------------------------------------------- checks
def _loss_matrix(losses: np.ndarray) -> np.ndarray:
    losses = check_array(losses, "losses", ndim=2, dtype=float, min_len=1)
    if losses.size == 0 or losses.min() < 0 or losses.max() > 1:
        raise ValueError(f"losses must be a non-empty (T, K) array with entries in [0, 1], got shape {losses.shape}")
    return losses


def _actions(actions: np.ndarray, horizon: int, n_actions: int) -> np.ndarray:
    actions = check_array(actions, "actions", shape=(horizon,))
    if actions.dtype.kind not in "iu" or (actions.size and (actions.min() < 0 or actions.max() >= n_actions)):
        raise ValueError(f"actions must be integers in [0, {n_actions - 1}], got dtype {actions.dtype}")
    return actions


def _rounds(start: int, stop: int, horizon: int) -> None:
    """Check a block of rounds ``0 <= start < stop <= horizon`` (cheap for Python ints)."""
    if type(start) is not int or type(stop) is not int:
        start = check_scalar(start, "start", "int", min=0)
        stop = check_scalar(stop, "stop", "int", min=1)
    if not 0 <= start < stop <= horizon:
        raise ValueError(f"rounds must satisfy 0 <= start < stop <= horizon={horizon}, got {start}, {stop}")


def _round_arm_arrays(t: np.ndarray, arms: np.ndarray, horizon: int, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer arrays of rounds in ``[0, horizon)`` and arms in ``[0, n_arms)`` of one shape."""
    t, arms = check_array(t, "t"), check_array(arms, "arms")
    for name, x, high in (("t", t, horizon), ("arms", arms, n_arms)):
        if x.dtype.kind not in "iu":
            raise TypeError(f"{name} must be an integer array, got dtype {x.dtype}")
        if x.size and (x.min() < 0 or x.max() >= high):
            raise ValueError(f"{name} must lie in [0, {high - 1}], got values in [{x.min()}, {x.max()}]")
    if t.shape != arms.shape:
        raise ValueError(f"t and arms must have the same shape, got {t.shape} and {arms.shape}")
    return t, arms


def check_loss(loss: float, bounded: bool = True) -> float:
    """``loss`` as a float: a finite real number, in [0, 1] when ``bounded`` (the protocol's convention)."""
    return check_scalar(loss, "loss", "real", min=0.0 if bounded else None, max=1.0 if bounded else None)


def _clip_rescale(loss: float, clip: float | None) -> float:
    """Loss in [0, 1]: checked as is when ``clip`` is None, else clipped to [-c, 1 + c], mapped to [0, 1]."""
    if clip is None:
        return check_loss(loss)
    value = check_loss(loss, bounded=False)
    return (min(max(value, -clip), 1.0 + clip) + clip) / (1.0 + 2.0 * clip)


def sample_index(rng: np.random.Generator, p: np.ndarray) -> int:
    """Draw an index from the distribution ``p`` (a 1-d array of non-negative weights with a positive
    finite sum) with one uniform number (faster than ``rng.choice``)."""
    if type(p) is not np.ndarray or p.ndim != 1 or p.size == 0:
        p = check_probability_vector(p, "p", atol=np.inf)
    if p.size > _FEW_ARMS:
        total = p.sum()
        if not 0.0 < total < math.inf:
            check_probability_vector(p, "p", atol=np.inf)
            raise ValueError(f"p must have a positive finite sum, got {total}")
        return int(min(np.searchsorted(np.cumsum(p), rng.random() * total, side="right"), p.size - 1))
    masses = p.tolist()
    total = sum(masses)
    if not 0.0 < total < math.inf:
        check_probability_vector(p, "p", atol=np.inf)
        raise ValueError(f"p must have a positive finite sum, got {total}")
    u = rng.random() * total
    for i, mass in enumerate(masses):
        u -= mass
        if u < 0.0:
            return i
    return p.size - 1


_FEW_ARMS = 32  # below this many arms, plain Python floats beat NumPy's per-call overhead


def check_advice(advice: np.ndarray, n_experts: int, n_actions: int) -> np.ndarray:
    """Validated advice: ``(N,)`` integer recommendations or ``(N, K)`` rows that are distributions."""
    if type(n_experts) is not int or n_experts < 1:  # the learners' per-round call passes checked ints
        n_experts = check_scalar(n_experts, "n_experts", "int", min=1)
    if type(n_actions) is not int or n_actions < 1:
        n_actions = check_scalar(n_actions, "n_actions", "int", min=1)
    advice = check_array(advice, "advice", ndim=(1, 2))
    if advice.shape == (n_experts,) and advice.dtype.kind in "iu":
        if advice.min() < 0 or advice.max() >= n_actions:
            raise ValueError(
                f"advice must recommend actions in [0, {n_actions - 1}], got values in "
                f"[{advice.min()}, {advice.max()}]"
            )
        return advice
    if advice.shape != (n_experts, n_actions):
        raise ValueError(
            f"advice must be an ({n_experts},) integer array or an ({n_experts}, {n_actions}) array of "
            f"distributions, got shape {advice.shape} and dtype {advice.dtype}"
        )
    return check_probability_vector(advice, "advice rows", ndim=2, atol=1e-9)


# ----------------------------------------------------------------------------- algorithms
def _tsallis_solve(gaps: np.ndarray, eta: float) -> np.ndarray:
    """Tsallis-INF weights ``p_a = 4 / (eta (gap_a - x))^2`` with ``x < 0`` chosen so that ``sum p = 1``.

    ``gaps`` are the cumulative loss estimates minus their minimum (so ``gaps >= 0`` with minimum 0).

    ``f(x) = sum_a p_a(x) - 1`` is increasing and convex on ``x < 0`` with ``f'(x) = eta sum_a p_a^{3/2}``;
    at ``x = -2 / eta`` the arm with gap 0 alone has mass 1, so Newton's method started there decreases
    monotonically to the root (a warm start from the previous round's ``x`` was measured slower: it
    starts left of the root and overshoots).  Few arms are handled in plain Python floats.
    """
    x = -2.0 / eta
    few = gaps.size <= _FEW_ARMS
    values = gaps.tolist() if few else gaps
    for _ in range(100):
        if few:
            total = cubes = 0.0
            for gap in values:
                q = 2.0 / (eta * (gap - x))
                total += q * q
                cubes += q * q * q
        else:
            q = 2.0 / (eta * (values - x))
            total, cubes = float(np.sum(q * q)), float(np.sum(q * q * q))
        step = (total - 1.0) / (eta * cubes)
        if abs(total - 1.0) < 1e-10 or abs(step) <= 1e-15 * abs(x):
            break
        x -= step
    p = 4.0 / (eta * (gaps - x)) ** 2
    return p / p.sum()


class TsallisINF:
    """Tsallis-INF (Zimmert & Seldin 2021): FTRL with the 1/2-Tsallis entropy and importance weighting.

    Round t plays ``p_a = 4 / (eta_t (L_a - x))^2`` with ``eta_t = eta0 / sqrt(t)`` and ``x < min L``
    chosen by Newton's method so that ``sum p = 1``; after playing ``a`` with loss ``l`` it sets
    ``L_a += l / p_a``.  The rule is shift invariant, so any finite loss (e.g. a Laplace-noised one,
    possibly negative) is accepted.  The default base of the private conversion.
    """

    def __init__(self, n_arms: int, eta0: float = 2.0) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
        self.eta0 = check_scalar(eta0, "eta0", "real", min=0.0, inclusive="neither")
        self.cum_loss_estimates = np.zeros(self.n_arms)
        self.t = 0
        self.probabilities = self._solve()

    @property
    def eta(self) -> float:
        """Learning rate of the next round, ``eta0 / sqrt(t + 1)``."""
        return self.eta0 / math.sqrt(self.t + 1)

    def _solve(self) -> np.ndarray:
        L = self.cum_loss_estimates
        shift = L.min()  # shift invariance: work with gaps >= 0 for precision
        return _tsallis_solve(L - shift, self.eta)

    def act(self, rng: np.random.Generator) -> int:
        """Draw an arm from the current distribution ``probabilities``."""
        return sample_index(rng, self.probabilities)

    def update(self, arm: int, loss: float) -> None:
        """Importance-weighted update of the played arm with any finite ``loss``."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        self.cum_loss_estimates[arm] += check_loss(loss, bounded=False) / self.probabilities[arm]
        self.t += 1
        self.probabilities = self._solve()


class EXP3:
    """EXP3 with uniform exploration (Auer et al. 2002), in the loss form.

    ``p = (1 - gamma) w / sum w + gamma / K``, ``w_a <- w_a exp(-eta l_a / p_a)`` for the played arm.
    Defaults ``eta = sqrt(2 ln K / (T K))`` and ``gamma = min(1, sqrt(K ln K / T))`` for ``T = horizon``
    updates.  With ``clip = c`` the loss is clipped to ``[-c, 1 + c]`` and rescaled to [0, 1]
    (for noisy losses); without it the loss must lie in [0, 1].
    """

    def __init__(
        self,
        n_arms: int,
        horizon: int,
        eta: float | None = None,
        gamma: float | None = None,
        clip: float | None = None,
    ) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
        self.horizon = check_scalar(horizon, "horizon", "int", min=1)
        log_k = math.log(self.n_arms)
        eta = None if eta is None else check_scalar(eta, "eta", "real", min=0.0)
        gamma = None if gamma is None else check_scalar(gamma, "gamma", "real", min=0.0, max=1.0)
        self.eta = math.sqrt(2.0 * log_k / (self.horizon * self.n_arms)) if eta is None else eta
        self.gamma = min(1.0, math.sqrt(self.n_arms * log_k / self.horizon)) if gamma is None else gamma
        self.clip = None if clip is None else check_scalar(clip, "clip", "real", min=0.0)
        self.log_weights = np.zeros(self.n_arms)
        self.t = 0

    @property
    def probabilities(self) -> np.ndarray:
        """The distribution played next round."""
        w = np.exp(self.log_weights - self.log_weights.max())
        return (1.0 - self.gamma) * w / w.sum() + self.gamma / self.n_arms

    def act(self, rng: np.random.Generator) -> int:
        """Draw an arm from ``probabilities``."""
        return sample_index(rng, self.probabilities)

    def update(self, arm: int, loss: float) -> None:
        """Exponential-weights step on the importance-weighted loss of the played arm."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        if self.t >= self.horizon:
            raise ValueError(f"horizon exceeded: EXP3 was built for {self.horizon} updates")
        value = _clip_rescale(loss, self.clip)
        self.log_weights[arm] -= self.eta * value / self.probabilities[arm]
        self.t += 1


class EXP4:
    """EXP4 for bandits with expert advice (Auer et al. 2002), in the loss form.

    ``q = (1 - gamma) sum_i w_i xi^i / sum w + gamma / K``; after playing ``I`` with loss ``l`` the
    estimate ``lhat = l / q_I`` on ``I`` gives expert losses ``yhat_i = xi^i_I lhat`` and
    ``w_i <- w_i exp(-eta yhat_i)``.  Default ``eta = sqrt(2 ln N / (T K))``.  ``clip`` as in ``EXP3``.
    """

    def __init__(
        self,
        n_experts: int,
        n_actions: int,
        horizon: int,
        eta: float | None = None,
        gamma: float = 0.0,
        clip: float | None = None,
    ) -> None:
        self.n_experts = check_scalar(n_experts, "n_experts", "int", min=1)
        self.n_actions = check_scalar(n_actions, "n_actions", "int", min=1)
        self.horizon = check_scalar(horizon, "horizon", "int", min=1)
        eta = None if eta is None else check_scalar(eta, "eta", "real", min=0.0)
        self.eta = (
            math.sqrt(2.0 * math.log(self.n_experts) / (self.horizon * self.n_actions))
            if eta is None
            else eta
        )
        self.gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0)
        self.clip = None if clip is None else check_scalar(clip, "clip", "real", min=0.0)
        self.log_weights = np.zeros(self.n_experts)
        self.t = 0
        self._advice: np.ndarray | None = None
        self._q: np.ndarray | None = None

    @property
    def expert_weights(self) -> np.ndarray:
        """Normalised weights over experts."""
        w = np.exp(self.log_weights - self.log_weights.max())
        return w / w.sum()

    def action_distribution(self, advice: np.ndarray) -> np.ndarray:
        """The action distribution ``q`` for the given advice."""
        advice = check_advice(advice, self.n_experts, self.n_actions)
        w = self.expert_weights
        if advice.ndim == 1:
            mix = np.bincount(advice, weights=w, minlength=self.n_actions)
        else:
            mix = w @ advice
        return (1.0 - self.gamma) * mix + self.gamma / self.n_actions

    def act(self, rng: np.random.Generator, advice: np.ndarray) -> int:
        """Draw an action from the weighted mixture of the experts' advice."""
        if self.t >= self.horizon:
            raise ValueError(f"horizon exceeded: EXP4 was built for {self.horizon} rounds")
        self._advice = check_advice(advice, self.n_experts, self.n_actions)
        self._q = self.action_distribution(self._advice)
        return sample_index(rng, self._q)

    def update(self, action: int, loss: float) -> None:
        """Importance-weighted exponential-weights step on the experts."""
        if self._advice is None or self._q is None:
            raise ValueError("update() must follow act() in the same round")
        action = check_scalar(action, "action", "int", min=0, max=self.n_actions - 1)
        lhat = _clip_rescale(loss, self.clip) / self._q[action]
        if self._advice.ndim == 1:
            self.log_weights -= self.eta * lhat * (self._advice == action)
        else:
            self.log_weights -= self.eta * lhat * self._advice[:, action]
        self._advice = self._q = None
        self.t += 1


class UCB:
    """UCB1 on losses (Auer, Cesa-Bianchi & Fischer 2002): play ``argmin mean_a - scale sqrt(2 ln t / n_a)``.

    Unplayed arms come first (lowest index); ties go to the lowest index.  Losses in [0, 1].  To pick
    the arm with the HIGHEST loss (e.g. the worst data source), feed ``1 - loss``.
    """

    def __init__(self, n_arms: int, scale: float = 1.0) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
        self.scale = check_scalar(scale, "scale", "real", min=0.0)
        self.counts = np.zeros(self.n_arms, dtype=int)
        self.sums = np.zeros(self.n_arms)
        self.t = 0

    def indices(self) -> np.ndarray:
        """Lower confidence bounds on the mean loss (``-inf`` for unplayed arms)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            index = self.sums / self.counts - self.scale * np.sqrt(
                2.0 * math.log(max(self.t, 1)) / self.counts
            )
        return np.where(self.counts == 0, -np.inf, index)

    def act(self, rng: np.random.Generator) -> int:
        """Deterministic: the arm with the smallest index (``rng`` is accepted for the protocol)."""
        return int(np.argmin(self.indices()))

    def update(self, arm: int, loss: float) -> None:
        """Record the loss of the played arm."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        self.sums[arm] += check_loss(loss)
        self.counts[arm] += 1
        self.t += 1


class FollowTheLeader:
    """Deterministic greedy learner: play the arm with the smallest mean received loss.

    Arms never updated count as having mean ``prior``; ties go to the lowest index.  Any finite loss
    is accepted.  Used as the deterministic base of the exact privacy audit.
    """

    def __init__(self, n_arms: int, prior: float = 0.5) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
        self.prior = check_scalar(prior, "prior", "real")
        self.counts = np.zeros(self.n_arms, dtype=int)
        self.sums = np.zeros(self.n_arms)

    def act(self, rng: np.random.Generator) -> int:
        """Deterministic: the current leader (``rng`` is accepted for the protocol)."""
        means = np.where(self.counts > 0, self.sums / np.maximum(self.counts, 1), self.prior)
        return int(np.argmin(means))

    def update(self, arm: int, loss: float) -> None:
        """Record the loss of the played arm."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        self.sums[arm] += check_loss(loss, bounded=False)
        self.counts[arm] += 1


class Uniform:
    """Uniformly random play (reference: regret of a learner that learns nothing)."""

    def __init__(self, n_arms: int) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)

    def act(self, rng: np.random.Generator) -> int:
        """A uniform arm."""
        return int(rng.integers(self.n_arms))

    def update(self, arm: int, loss: float) -> None:
        """Nothing to learn."""
        check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        check_loss(loss, bounded=False)


class FixedArm:
    """Always plays ``arm`` (reference player with a known regret)."""

    def __init__(self, n_arms: int, arm: int = 0) -> None:
        self.n_arms = check_scalar(n_arms, "n_arms", "int", min=1)
        self.arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)

    def act(self, rng: np.random.Generator) -> int:
        """The fixed arm."""
        return self.arm

    def update(self, arm: int, loss: float) -> None:
        """Nothing to learn."""
        check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        check_loss(loss, bounded=False)


# ----------------------------------------------------------------------------- environments
class BernoulliEnv:
    """Oblivious stochastic environment: ``l_t(a) ~ Bernoulli(means[s(t), a])``.

    ``means`` is ``(K,)`` (stationary) or ``(S, K)`` (switching): segment ``s(t) = (t // switch_every) % S``,
    with ``switch_every = ceil(horizon / S)`` by default.  ``sample_sum`` draws the summed losses of
    one arm over a block of rounds with one Binomial draw per segment piece.
    """

    def __init__(self, means: np.ndarray, horizon: int, switch_every: int | None = None) -> None:
        means = check_array(means, "means", ndim=(1, 2), dtype=float)
        if means.ndim == 1:
            means = means[None, :]
        if means.shape[1] < 1 or not np.all((means >= 0) & (means <= 1)):
            raise ValueError(
                f"means must be a (K,) or (S, K) array of probabilities in [0, 1], got shape {means.shape} "
                f"and values in [{means.min(initial=0.0):g}, {means.max(initial=0.0):g}]"
            )
        self.means = means
        self._means = means.tolist()  # plain floats for the per-round sampler
        self.n_arms = means.shape[1]
        self.horizon = check_scalar(horizon, "horizon", "int", min=1)
        default = math.ceil(self.horizon / means.shape[0])
        self.switch_every = (
            default if switch_every is None else check_scalar(switch_every, "switch_every", "int", min=1)
        )
        self._segment_counts = np.bincount(
            (np.arange(self.horizon) // self.switch_every) % means.shape[0], minlength=means.shape[0]
        )

    def segment(self, t: np.ndarray | int) -> np.ndarray | int:
        """Segment index of round(s) ``t`` (integers in ``[0, horizon)``, any shape)."""
        t = check_array(t, "t")
        if t.dtype.kind not in "iu":
            raise TypeError(f"t must hold integer rounds, got dtype {t.dtype}")
        if t.size and (t.min() < 0 or t.max() >= self.horizon):
            raise ValueError(f"t must lie in [0, {self.horizon - 1}], got values in [{t.min()}, {t.max()}]")
        return (t // self.switch_every) % self.means.shape[0]

    def mean_loss(self, t: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """Expected losses ``E l_t(arm)`` for integer arrays of rounds and arms of one shape."""
        t, arms = _round_arm_arrays(t, arms, self.horizon, self.n_arms)
        return self.means[self.segment(t), arms]

    def mean_totals(self) -> np.ndarray:
        """``sum_t E l_t(a)`` for every arm (length ``K``)."""
        return self._segment_counts @ self.means

    def sample_sum(self, arm: int, start: int, stop: int, rng: np.random.Generator) -> float:
        """Sum of the realised losses ``l_t(arm)`` over rounds ``start <= t < stop``."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        _rounds(start, stop, self.horizon)
        n_segments, width = self.means.shape[0], self.switch_every
        total, t = 0, int(start)
        while t < stop:
            end = min(stop, (t // width + 1) * width)
            total += rng.binomial(end - t, self._means[(t // width) % n_segments][arm])
            t = end
        return float(total)


def switching_means(n_arms: int, n_segments: int, best: float = 0.25, other: float = 0.75) -> np.ndarray:
    """``(S, K)`` means where arm ``s % K`` is the best arm (mean ``best``) of segment ``s``."""
    check_scalar(n_arms, "n_arms", "int", min=1)
    check_scalar(n_segments, "n_segments", "int", min=1)
    best = check_scalar(best, "best", "real", min=0.0, max=1.0)
    other = check_scalar(other, "other", "real", min=0.0, max=1.0)
    means = np.full((n_segments, n_arms), other)
    means[np.arange(n_segments), np.arange(n_segments) % n_arms] = best
    return means


class LossMatrixEnv:
    """Oblivious adversary given by a fixed ``(T, K)`` loss matrix with entries in [0, 1]."""

    def __init__(self, losses: np.ndarray) -> None:
        self.losses = _loss_matrix(losses)
        self.horizon, self.n_arms = self.losses.shape

    def mean_loss(self, t: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """The losses ``l_t(arm)`` (deterministic) for integer arrays of rounds and arms of one shape."""
        t, arms = _round_arm_arrays(t, arms, self.horizon, self.n_arms)
        return self.losses[t, arms]

    def mean_totals(self) -> np.ndarray:
        """``sum_t l_t(a)`` for every arm."""
        return self.losses.sum(axis=0)

    def sample_sum(self, arm: int, start: int, stop: int, rng: np.random.Generator) -> float:
        """Sum of ``l_t(arm)`` over rounds ``start <= t < stop`` (``rng`` unused)."""
        arm = check_scalar(arm, "arm", "int", min=0, max=self.n_arms - 1)
        _rounds(start, stop, self.horizon)
        return float(self.losses[start:stop, arm].sum())


class ExpertAdviceEnv:
    """Bandit with expert advice: ``advice`` ``(T, N)`` recommended actions or ``(T, N, K)`` distributions,
    and an oblivious ``(T, K)`` loss matrix in [0, 1]."""

    def __init__(self, advice: np.ndarray, losses: np.ndarray) -> None:
        losses = _loss_matrix(losses)
        advice = check_array(advice, "advice")
        self.horizon, self.n_actions = losses.shape
        if advice.ndim == 2 and np.issubdtype(advice.dtype, np.integer):
            if advice.shape[0] != self.horizon or advice.min() < 0 or advice.max() >= self.n_actions:
                raise ValueError("integer advice must be (T, N) with actions in [0, K - 1]")
            self.expert_totals = np.take_along_axis(losses, advice, axis=1).sum(axis=0)
        elif advice.ndim == 3 and advice.shape[0] == self.horizon and advice.shape[2] == self.n_actions:
            advice = check_probability_vector(advice, "advice rows", ndim=3, atol=1e-9)
            self.expert_totals = np.einsum("tnk,tk->n", advice, losses)
        else:
            raise ValueError(
                f"advice must be (T, N) integers or (T, N, K) distributions with T={self.horizon}, "
                f"K={self.n_actions}; got shape {advice.shape}"
            )
        self.advice = advice
        self.losses = losses
        self.n_experts = advice.shape[1]

    def loss(self, t: int, action: int) -> float:
        """The loss ``l_t(action)``."""
        t = check_scalar(t, "t", "int", min=0, max=self.horizon - 1)
        return float(self.losses[t, check_scalar(action, "action", "int", min=0, max=self.n_actions - 1)])


# ----------------------------------------------------------------------------- runners and regret
def run_bandit(algorithm: BanditAlgorithm, env: BernoulliEnv | LossMatrixEnv, seed: Seed = None) -> np.ndarray:
    """Play ``algorithm`` for ``env.horizon`` rounds, all draws from ``as_generator(seed)``; return the actions."""
    check_instance(algorithm, "algorithm", BanditAlgorithm, "a bandit algorithm with n_arms, act(rng), update")
    check_instance(env, "env", (BernoulliEnv, LossMatrixEnv))
    if algorithm.n_arms != env.n_arms:
        raise ValueError(f"algorithm has {algorithm.n_arms} arms but the environment has {env.n_arms}")
    rng = as_generator(seed)
    actions = np.empty(env.horizon, dtype=int)
    for t in range(env.horizon):
        arm = algorithm.act(rng)
        algorithm.update(arm, env.sample_sum(arm, t, t + 1, rng))
        actions[t] = arm
    return actions


def run_experts(algorithm: ExpertAlgorithm, env: ExpertAdviceEnv, seed: Seed = None) -> np.ndarray:
    """Play an expert-advice ``algorithm`` for ``env.horizon`` rounds; return the ``(T,)`` actions."""
    check_instance(algorithm, "algorithm", ExpertAlgorithm,
                   "an expert-advice algorithm with n_experts, n_actions, act(rng, advice), update")
    check_instance(env, "env", ExpertAdviceEnv)
    if (algorithm.n_experts, algorithm.n_actions) != (env.n_experts, env.n_actions):
        raise ValueError(
            f"algorithm is for {algorithm.n_experts} experts and {algorithm.n_actions} actions, "
            f"the environment has {env.n_experts} and {env.n_actions}"
        )
    rng = as_generator(seed)
    actions = np.empty(env.horizon, dtype=int)
    for t in range(env.horizon):
        action = algorithm.act(rng, env.advice[t])
        algorithm.update(action, env.losses[t, action])
        actions[t] = action
    return actions


def regret(actions: np.ndarray, losses: np.ndarray) -> float:
    """Realised regret ``sum_t l_t(I_t) - min_a sum_t l_t(a)`` for a ``(T, K)`` loss matrix."""
    losses = check_array(losses, "losses", ndim=2, dtype=float)
    actions = _actions(actions, losses.shape[0], losses.shape[1])
    return float(losses[np.arange(losses.shape[0]), actions].sum() - losses.sum(axis=0).min())


def pseudo_regret(env: BernoulliEnv | LossMatrixEnv, actions: np.ndarray) -> float:
    """``sum_t E l_t(I_t) - min_a sum_t E l_t(a)``: regret against the best fixed arm in expectation."""
    check_instance(env, "env", (BernoulliEnv, LossMatrixEnv))
    actions = _actions(actions, env.horizon, env.n_arms)
    return float(env.mean_loss(np.arange(env.horizon), actions).sum() - env.mean_totals().min())


def regret_curve(env: BernoulliEnv | LossMatrixEnv, actions: np.ndarray) -> np.ndarray:
    """Cumulative pseudo-regret after each round against the best fixed arm over the whole horizon."""
    check_instance(env, "env", (BernoulliEnv, LossMatrixEnv))
    actions = _actions(actions, env.horizon, env.n_arms)
    t = np.arange(env.horizon)
    best = int(np.argmin(env.mean_totals()))
    return np.cumsum(env.mean_loss(t, actions) - env.mean_loss(t, np.full(env.horizon, best)))


def expert_regret(env: ExpertAdviceEnv, actions: np.ndarray) -> float:
    """``sum_t l_t(I_t) - min_i sum_t <xi_t^i, l_t>``: regret against the best expert in hindsight."""
    check_instance(env, "env", ExpertAdviceEnv)
    actions = _actions(actions, env.horizon, env.n_actions)
    return float(env.losses[np.arange(env.horizon), actions].sum() - env.expert_totals.min())
