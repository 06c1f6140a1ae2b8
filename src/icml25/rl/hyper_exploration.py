"""Hyper: hyperparameter-robust curiosity-driven exploration (Wang, Liu, Li, Amani, Zhou & Yang, ICML 2025,
arXiv:2412.03767), with the baselines it is compared with.

Curiosity adds ``beta * r_int`` to the task reward and its return swings with ``beta``.  Hyper (i)
*decouples*: an exploitation learner ``mu`` is trained on the extrinsic reward only and is the policy that
is evaluated, an exploration learner ``pi`` on ``r + beta * r_int``, both off-policy from one replay
buffer; (ii) *repositions*: every training episode starts with ``mu`` for ``L`` steps, ``L`` drawn from a
truncated geometric distribution on ``0..H``, then hands over to ``pi`` (the paper's Algorithm 1 in its
deep-RL form).  ``Decouple`` is Hyper with ``c = 0`` (explore from the first step); ``Curiosity`` is one
learner trained, run and evaluated on the mixed reward; ``Curiosity(beta=0)`` is the plain learner.

Intrinsic rewards are objects with ``compute(obs, action, next_obs)`` and ``update(obs, action, next_obs)``
(the split of rllte's intrinsic reward modules): ``CountBonus`` (``N(s')^-power``), ``RND`` (Burda et al.,
2019) and ``Disagreement`` (Pathak et al., 2019).  The bonus of a replayed transition is recomputed from the
current module when it is sampled, never stored.

Reconstructed (no official code was found): the default ``c = 0.95``; whether whole exploitation-only
episodes are mixed in (not done here); the exploration learner does not bootstrap from ``mu``'s values at
the switch (the two learners are independent).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.rl.buffers import ReplayBuffer
from icml25.rl.wrappers import evaluate_policy
from icml25.utils.random import Seed, as_generator, init_rng, int_seed, torch_generator
from icml25.utils.validation import check_array, check_bool, check_callable, check_choice, check_instance, check_scalar

__all__ = [
    "RND",
    "CountBonus",
    "Curiosity",
    "Decouple",
    "Disagreement",
    "Hyper",
    "HyperHistory",
    "c_for_mean_fraction",
    "truncated_geometric",
    "truncated_geometric_mean",
]


# ----------------------------------------------------------------------------- repositioning schedule
def _check_c(c: Any) -> float:
    return check_scalar(c, "c", "real", min=0, max=1, inclusive="left")


def truncated_geometric(c: float, horizon: int, size: int | None = None, seed: Seed = None) -> int | np.ndarray:
    """Draw the repositioning length ``L`` with ``P(L = l) ∝ (1 - c) c^l`` on ``l = 0..horizon``.

    Inverse-CDF sampling on the finite support: ``F(l) = (1 - c^(l+1)) / (1 - c^(H+1))``.  ``c = 0`` gives
    ``L = 0`` (Decouple); ``c -> 1`` tends to the uniform law on ``0..H``.  ``size`` draws an array.
    """
    c, horizon = _check_c(c), check_scalar(horizon, "horizon", "int", min=1)
    if size is not None:
        size = check_scalar(size, "size", "int", min=1)
    rng = as_generator(seed)
    u = rng.random(1 if size is None else size)
    if c == 0.0:
        draws = np.zeros_like(u, dtype=np.int64)
    else:
        mass = 1.0 - c ** (horizon + 1)
        draws = np.ceil(np.log1p(-u * mass) / math.log(c) - 1.0 - 1e-12).astype(np.int64)
        draws = np.clip(draws, 0, horizon)
    return int(draws[0]) if size is None else draws


def truncated_geometric_mean(c: float, horizon: int) -> float:
    """``E[L]`` of :func:`truncated_geometric`: ``c / (1 - c) - (H + 1) c^(H+1) / (1 - c^(H+1))``."""
    c, horizon = _check_c(c), check_scalar(horizon, "horizon", "int", min=1)
    if c == 0.0:
        return 0.0
    tail = c ** (horizon + 1)
    return c / (1.0 - c) - (horizon + 1) * tail / (1.0 - tail)


def c_for_mean_fraction(frac: float, horizon: int) -> float:
    """The ``c`` whose truncated geometric law on ``0..H`` has ``E[L] = frac * H``.

    The mean increases with ``c`` from 0 (``c = 0``) towards ``H / 2`` (the uniform law, ``c -> 1``), so
    ``frac`` must lie in ``[0, 0.5)``.  Solved by bisection to 1e-12.
    """
    frac = check_scalar(frac, "frac", "real", min=0, max=0.5, inclusive="left")
    horizon = check_scalar(horizon, "horizon", "int", min=1)
    target, lo, hi = frac * horizon, 0.0, 1.0 - 1e-15
    if target >= truncated_geometric_mean(hi, horizon):
        raise ValueError(f"frac must be below the largest reachable mean fraction for horizon={horizon}, got {frac}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if truncated_geometric_mean(mid, horizon) < target else (lo, mid)
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


# ----------------------------------------------------------------------------- intrinsic rewards
def _check_transitions(obs: Any, action: Any, next_obs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obs = check_array(obs, "obs", min_len=1)
    next_obs = check_array(next_obs, "next_obs", min_len=1)
    action = check_array(action, "action", min_len=1)
    if obs.shape != next_obs.shape:
        raise ValueError(f"next_obs must have the shape of obs {obs.shape}, got {next_obs.shape}")
    if not (len(obs) == len(action) == len(next_obs)):
        raise ValueError(f"obs, action and next_obs must have one row per transition, got lengths "
                         f"{len(obs)}, {len(action)}, {len(next_obs)}")
    return obs, action, next_obs


class CountBonus:
    """The count bonus ``r_int = N(key)^-power``: ``key`` is ``s'`` (``mode="state"``) or ``(s, a)``.

    Counts are kept in a dict keyed by ``key_fn(row)`` (default: the integer itself for integer scalar
    observations, else the row's bytes, so any array works); an unseen key has bonus 1.  ``power = 0.5`` is
    the classic ``1 / sqrt(N)``.
    """

    def __init__(self, mode: str = "state", power: float = 0.5, key_fn: Callable[[np.ndarray], Any] | None = None):
        self.mode = check_choice(mode, "mode", ("state", "state_action"))
        self.power = check_scalar(power, "power", "real", min=0, inclusive="neither")
        self.key_fn = None if key_fn is None else check_callable(key_fn, "key_fn")
        self.counts: dict[Any, int] = {}

    def _rows(self, x: np.ndarray) -> list[Any]:
        if self.key_fn is not None:
            return [self.key_fn(row) for row in x]
        if x.ndim == 1 and x.dtype.kind in "iu":
            return x.tolist()
        return [row.tobytes() for row in x]

    def _keys(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> list[Any]:
        if self.mode == "state":
            return self._rows(next_obs)
        return list(zip(self._rows(obs), self._rows(action), strict=True))

    def compute(self, obs: Any, action: Any, next_obs: Any) -> np.ndarray:
        """The bonus of each transition under the current counts (batch on axis 0)."""
        return self._compute(*_check_transitions(obs, action, next_obs))

    def _compute(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
        n = np.array([self.counts.get(k, 0) for k in self._keys(obs, action, next_obs)], dtype=float)
        return np.maximum(n, 1.0) ** -self.power

    def update(self, obs: Any, action: Any, next_obs: Any) -> dict[str, float]:
        """Count the transitions' keys."""
        return self._update(*_check_transitions(obs, action, next_obs))

    def _update(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> dict[str, float]:
        for k in self._keys(obs, action, next_obs):
            self.counts[k] = self.counts.get(k, 0) + 1
        return {"distinct_keys": float(len(self.counts))}


class _RunningMeanStd:
    """Running mean and variance of a stream of batches (Chan et al.'s parallel update)."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean, self.var, self.count = np.zeros(shape), np.ones(shape), 1e-4

    def update(self, x: np.ndarray) -> None:
        b_mean, b_var, b_count = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta, total = b_mean - self.mean, self.count + b_count
        self.mean = self.mean + delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        self.var, self.count = m2 / total, total


class _NetworkBonus:
    """Shared parts of the network bonuses: observation and intrinsic-return normalisation (CleanRL's
    ``ppo_rnd_envpool.py``: observations standardised and clipped to [-5, 5], the bonus divided by the
    running std of the discounted intrinsic return, std floored at 1e-8)."""

    obs_dim: int

    def _setup_norm(self, normalize: bool, gamma: float) -> None:
        self.normalize = check_bool(normalize, "normalize")
        self.gamma = check_scalar(gamma, "gamma", "real", min=0, max=1)
        self.obs_rms = _RunningMeanStd((self.obs_dim,))
        self.return_rms = _RunningMeanStd()
        self._discounted = 0.0

    def _flat(self, x: np.ndarray, name: str) -> np.ndarray:
        x = x.reshape(len(x), -1).astype(np.float32)
        if x.shape[1] != self.obs_dim:
            raise ValueError(f"{name} must have obs_dim={self.obs_dim} features per row, got {x.shape[1]}")
        return x

    def _norm_obs(self, x: np.ndarray) -> np.ndarray:
        if not self.normalize:
            return x
        return np.clip((x - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + 1e-8), -5, 5).astype(np.float32)

    def _scale(self, raw: np.ndarray) -> np.ndarray:
        if not self.normalize:
            return raw
        return raw / max(float(np.sqrt(self.return_rms.var)), 1e-8)

    def _track(self, next_flat: np.ndarray, raw: np.ndarray) -> None:
        if not self.normalize:
            return
        self.obs_rms.update(next_flat)
        returns = []
        for r in raw:
            self._discounted = self._discounted * self.gamma + float(r)
            returns.append(self._discounted)
        self.return_rms.update(np.array(returns))


class RND(_NetworkBonus):
    """Random network distillation (Burda et al., 2019): the bonus is ``||f(s') - g(s')||^2`` of a trained
    predictor ``g`` against a fixed random target ``f``, normalised as in :class:`_NetworkBonus`.

    Parameters: ``obs_dim`` (flattened observation size), ``hidden`` and ``out_dim`` of both MLPs,
    ``learning_rate`` of the predictor (Adam), ``normalize``, ``gamma`` of the intrinsic return, ``seed``.
    """

    def __init__(self, obs_dim: int, hidden: int = 128, out_dim: int = 64, learning_rate: float = 1e-4,
                 normalize: bool = True, gamma: float = 0.99, seed: Seed = None) -> None:
        import torch
        from torch import nn

        self.obs_dim = check_scalar(obs_dim, "obs_dim", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        out_dim = check_scalar(out_dim, "out_dim", "int", min=1)
        self.learning_rate = check_scalar(learning_rate, "learning_rate", "real", min=0, inclusive="neither")
        self._setup_norm(normalize, gamma)

        def mlp() -> nn.Module:
            return nn.Sequential(nn.Linear(self.obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, out_dim))

        with init_rng(seed):
            self.target, self.predictor = mlp(), mlp()
        self.target.requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.predictor.parameters(), lr=self.learning_rate)

    def _raw(self, next_flat: np.ndarray, grad: bool = False) -> Any:
        import torch

        x = torch.as_tensor(self._norm_obs(next_flat))
        with torch.set_grad_enabled(grad):
            return ((self.predictor(x) - self.target(x)) ** 2).sum(dim=1)

    def compute(self, obs: Any, action: Any, next_obs: Any) -> np.ndarray:
        """The normalised prediction error at each ``next_obs`` (``obs`` and ``action`` are not used)."""
        obs, action, next_obs = _check_transitions(obs, action, next_obs)
        return self._compute(obs, action, next_obs)

    def _compute(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
        return self._scale(self._raw(self._flat(next_obs, "next_obs")).numpy().astype(float))

    def update(self, obs: Any, action: Any, next_obs: Any) -> dict[str, float]:
        """Update the normalisers with ``next_obs`` and take one predictor step on it."""
        return self._update(*_check_transitions(obs, action, next_obs))

    def _update(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> dict[str, float]:
        flat = self._flat(next_obs, "next_obs")
        loss = self._raw(flat, grad=True)
        self._track(flat, loss.detach().numpy())
        self.optimizer.zero_grad()
        loss.mean().backward()
        self.optimizer.step()
        return {"rnd_loss": float(loss.detach().mean())}


class Disagreement(_NetworkBonus):
    """Ensemble disagreement (Pathak et al., 2019): ``n_models`` forward models ``(s, a) -> s'``; the bonus
    is the variance of their predictions, averaged over features, normalised as in :class:`_NetworkBonus`.

    ``n_actions`` one-hot encodes integer actions (discrete spaces); ``None`` takes actions as vectors of
    ``act_dim`` entries.  Each model sees its own bootstrap resample of every update batch.
    """

    def __init__(self, obs_dim: int, act_dim: int, n_models: int = 5, hidden: int = 64, learning_rate: float = 1e-3,
                 n_actions: int | None = None, normalize: bool = True, gamma: float = 0.99, seed: Seed = None):
        import torch
        from torch import nn

        self.obs_dim = check_scalar(obs_dim, "obs_dim", "int", min=1)
        self.act_dim = check_scalar(act_dim, "act_dim", "int", min=1)
        self.n_models = check_scalar(n_models, "n_models", "int", min=2)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.n_actions = None if n_actions is None else check_scalar(n_actions, "n_actions", "int", min=1)
        if self.n_actions is not None and self.n_actions != self.act_dim:
            raise ValueError(f"act_dim must equal n_actions for one-hot actions, got {act_dim} and {n_actions}")
        self.learning_rate = check_scalar(learning_rate, "learning_rate", "real", min=0, inclusive="neither")
        self._setup_norm(normalize, gamma)
        with init_rng(seed):
            self.models = nn.ModuleList(
                nn.Sequential(nn.Linear(self.obs_dim + self.act_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                              nn.ReLU(), nn.Linear(hidden, self.obs_dim)) for _ in range(self.n_models))
        self.optimizer = torch.optim.Adam(self.models.parameters(), lr=self.learning_rate)
        self.generator = torch_generator(seed)

    def _inputs(self, obs: np.ndarray, action: np.ndarray) -> Any:
        import torch

        o = self._norm_obs(self._flat(obs, "obs"))
        if self.n_actions is not None:
            idx = action.reshape(-1).astype(np.int64)
            if idx.min() < 0 or idx.max() >= self.n_actions:
                raise ValueError(f"action must hold integers in [0, {self.n_actions - 1}]")
            a = np.eye(self.n_actions, dtype=np.float32)[idx]
        else:
            a = action.reshape(len(action), -1).astype(np.float32)
            if a.shape[1] != self.act_dim:
                raise ValueError(f"action must have act_dim={self.act_dim} entries per row, got {a.shape[1]}")
        return torch.as_tensor(np.concatenate([o, a], axis=1))

    def compute(self, obs: Any, action: Any, next_obs: Any) -> np.ndarray:
        """The normalised variance of the ensemble's predictions of ``next_obs`` at ``(obs, action)``."""
        return self._compute(*_check_transitions(obs, action, next_obs))

    def _compute(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
        import torch

        x = self._inputs(obs, action)
        with torch.no_grad():
            preds = torch.stack([m(x) for m in self.models])
        return self._scale(preds.var(dim=0).mean(dim=1).numpy().astype(float))

    def update(self, obs: Any, action: Any, next_obs: Any) -> dict[str, float]:
        """One step of every forward model on a bootstrap resample of the transitions."""
        return self._update(*_check_transitions(obs, action, next_obs))

    def _update(self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray) -> dict[str, float]:
        import torch

        x = self._inputs(obs, action)
        flat = self._flat(next_obs, "next_obs")
        y = torch.as_tensor(self._norm_obs(flat))
        with torch.no_grad():
            raw = torch.stack([m(x) for m in self.models]).var(dim=0).mean(dim=1).numpy()
        self._track(flat, raw)
        loss = 0.0
        for model in self.models:
            idx = torch.randint(len(x), (len(x),), generator=self.generator)
            loss = loss + ((model(x[idx]) - y[idx]) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"forward_loss": float(loss.detach()) / self.n_models}


# ----------------------------------------------------------------------------- the agents
@dataclass
class HyperHistory:
    """What :meth:`Hyper.train` records: per evaluation, the step, the evaluated policy's mean return and the
    share of the steps so far collected by the exploration learner; per training episode, its ``L``."""

    steps: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    explore_fraction: list[float] = field(default_factory=list)
    reposition_lengths: list[int] = field(default_factory=list)
    episode_returns: list[float] = field(default_factory=list)


class Hyper:
    """Hyper: decoupled exploitation / exploration learners with truncated-geometric repositioning.

    Parameters
    ----------
    make_learner : ``make_learner(env, seed) -> learner`` with ``act(obs, explore)`` and
        ``update(batch, rewards)`` (:class:`icml25.rl.TabularQ`, :class:`icml25.rl.DQNAgent`,
        :class:`icml25.rl.TD3Agent`); it must reject an action space it cannot handle.
    curiosity : an intrinsic reward with ``compute``/``update`` (:class:`CountBonus`, :class:`RND`,
        :class:`Disagreement`).
    beta : the curiosity coefficient (>= 0; 0 makes the exploration learner unbonused).
    c : the continue probability of the repositioning length (``[0, 1)``; 0 is :class:`Decouple`).
    horizon : the support ``0..H`` of ``L``; ``None`` takes the environment's ``max_episode_steps``
        (an environment without a time limit then needs it).
    buffer_size, batch_size, learning_starts, train_frequency : CleanRL's replay settings; before
        ``learning_starts`` steps the actions are uniformly random.
    make_explore_learner : builds the exploration learner (and Curiosity's single learner) when it should
        differ from the exploitation learner (e.g. an optimistic initial value); default ``make_learner``.
    seed : all the randomness of training (learners, buffer, schedule, environment resets).
    """

    coupled = False

    def __init__(self, make_learner: Callable[[Any, int], Any], curiosity: Any, beta: float = 1.0, c: float = 0.95,
                 horizon: int | None = None, buffer_size: int = 100_000, batch_size: int = 32,
                 learning_starts: int = 1000, train_frequency: int = 1,
                 make_explore_learner: Callable[[Any, int], Any] | None = None, seed: Seed = None) -> None:
        self.make_learner = check_callable(make_learner, "make_learner")
        self.make_explore_learner = (self.make_learner if make_explore_learner is None
                                     else check_callable(make_explore_learner, "make_explore_learner"))
        for method in ("compute", "update"):
            if not callable(getattr(curiosity, method, None)):
                raise TypeError(f"curiosity must have compute() and update() methods, got {type(curiosity).__name__}")
        self.curiosity = curiosity
        self.beta = check_scalar(beta, "beta", "real", min=0)
        self.c = _check_c(c)
        self.horizon = None if horizon is None else check_scalar(horizon, "horizon", "int", min=1)
        self.buffer_size = check_scalar(buffer_size, "buffer_size", "int", min=1)
        self.batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        self.learning_starts = check_scalar(learning_starts, "learning_starts", "int", min=0)
        self.train_frequency = check_scalar(train_frequency, "train_frequency", "int", min=1)
        self.seed = int_seed(seed)
        self.exploit: Any = None
        self.explore: Any = None

    @property
    def policy(self) -> Any:
        """The evaluated learner: ``mu`` (the exploitation learner), or the single learner of Curiosity."""
        if self.exploit is None:
            raise RuntimeError("the agent is not trained yet: call train(env, total_timesteps) first")
        return self.exploit

    def act(self, obs: Any) -> Any:
        """The evaluated policy's greedy action at ``obs``."""
        return self.policy.act(obs, explore=False)

    def _horizon(self, env: Any) -> int:
        if self.horizon is not None:
            return self.horizon
        spec = getattr(env, "spec", None)
        steps = getattr(env, "max_episode_steps", None) or getattr(spec, "max_episode_steps", None)
        if steps is None:
            raise ValueError("horizon must be given for an environment without a time limit (max_episode_steps)")
        return int(steps)

    def train(self, env: Any, total_timesteps: int, eval_env: Any = None, eval_every: int = 1000,
              eval_episodes: int = 1) -> HyperHistory:
        """Collect ``total_timesteps`` environment steps and train; evaluate the policy every ``eval_every`` steps
        on ``eval_env`` (default: a copy of ``env``) for ``eval_episodes`` episodes."""
        import gymnasium

        check_instance(env, "env", gymnasium.Env)
        total_timesteps = check_scalar(total_timesteps, "total_timesteps", "int", min=1)
        eval_env = copy.deepcopy(env) if eval_env is None else check_instance(eval_env, "eval_env", gymnasium.Env)
        eval_every = check_scalar(eval_every, "eval_every", "int", min=1)
        eval_episodes = check_scalar(eval_episodes, "eval_episodes", "int", min=1)
        horizon = self._horizon(env)
        rng = np.random.default_rng([self.seed, 1])
        self.explore = self.make_explore_learner(env, int(rng.integers(2**31)))
        self.exploit = self.explore if self.coupled else self.make_learner(env, int(rng.integers(2**31)))
        buffer = ReplayBuffer(self.buffer_size, env.observation_space, env.action_space, seed=rng)
        env.action_space.seed(int(rng.integers(2**31)))
        history, explore_steps, step, episode = HyperHistory(), 0, 0, 0
        while step < total_timesteps:
            length = 0 if self.coupled else truncated_geometric(self.c, horizon, seed=rng)
            history.reposition_lengths.append(length)
            obs, _ = env.reset(seed=self.seed * 1_000_003 + episode)
            episode += 1
            t, ep_return, done = 0, 0.0, False
            while not done and step < total_timesteps:
                learner = self.exploit if t < length else self.explore
                explore_steps += int(self.coupled or t >= length)
                if step < self.learning_starts:
                    action = env.action_space.sample()
                else:
                    action = learner.act(obs, explore=True)
                next_obs, reward, terminated, truncated, _ = env.step(action)
                buffer._add(obs, next_obs, action, reward, terminated)
                self.curiosity.update(*(np.asarray(x)[None] for x in (obs, action, next_obs)))
                step, t, ep_return = step + 1, t + 1, ep_return + float(reward)
                if step > self.learning_starts and step % self.train_frequency == 0:
                    self._train_step(buffer)
                if step % eval_every == 0:
                    stats = evaluate_policy(eval_env, self.act, eval_episodes, seed=self.seed + step)
                    history.steps.append(step)
                    history.returns.append(stats.mean_return)
                    history.explore_fraction.append(explore_steps / step)
                obs, done = next_obs, terminated or truncated
            history.episode_returns.append(ep_return)
        return history

    def _train_step(self, buffer: ReplayBuffer) -> None:
        batch = buffer.sample(self.batch_size)
        bonus = np.asarray(self.curiosity.compute(batch.observations, batch.actions, batch.next_observations))
        if not np.all(np.isfinite(bonus)):
            raise FloatingPointError("the intrinsic reward produced a non-finite value")
        self.explore.update(batch, batch.rewards + self.beta * bonus)
        if not self.coupled:
            self.exploit.update(batch, batch.rewards.astype(float))


class Decouple(Hyper):
    """The Decouple baseline (Whitney et al., 2021, "DEEP"): Hyper without repositioning (``c = 0``) — the
    exploration learner acts from the first step, the exploitation learner learns off-policy and is evaluated."""

    def __init__(self, make_learner: Callable[[Any, int], Any], curiosity: Any, beta: float = 1.0,
                 horizon: int | None = None, buffer_size: int = 100_000, batch_size: int = 32,
                 learning_starts: int = 1000, train_frequency: int = 1,
                 make_explore_learner: Callable[[Any, int], Any] | None = None, seed: Seed = None) -> None:
        super().__init__(make_learner, curiosity, beta, 0.0, horizon, buffer_size, batch_size, learning_starts,
                         train_frequency, make_explore_learner, seed)


class Curiosity(Decouple):
    """Plain curiosity: one learner trained on ``r + beta * r_int``, which acts and is evaluated
    (``beta = 0``: the base learner without a bonus)."""

    coupled = True
