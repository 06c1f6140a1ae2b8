"""Robust-Power-UCT: "Online Robust Reinforcement Learning Through Monte-Carlo Planning" (Dam et al., ICML 2025).

Monte-Carlo tree search with explicit chance nodes that plans for the worst model inside an
ambiguity ball (total variation, chi-square or Wasserstein-1) around the empirical next-state and
reward distributions (Algorithm 1).  Each chance node is backed up with the robust Bellman operator
``Q(s,a) = R_rob(s,a) + gamma * sigma_{p_hat(s,a)}(V_children)``; each decision node with the
visit-weighted power mean ``V(s) = (sum_a N(s,a)/N(s) Q(s,a)^p)^(1/p)``; actions are selected with
the polynomial bonus ``C N(s)^(1/4) / N(s,a)^(1/2)``.  With radius 0 it is Stochastic-Power-UCT
(Dam, Maillard & Kaufmann, UAI 2024), the paper's baseline.

The MDPs (``GamblerProblem``, ``FrozenLake``, ``RandomTreeMDP``) are generative models the planner
queries with explicit states; ``GamblerEnv``, ``FrozenLakeEnv`` and ``RandomTreeEnv`` expose the same
MDPs as ``gymnasium.Env`` environments (``env.model`` is the wrapped generative model).

Example
-------
>>> from icml25.planning import GamblerProblem, RobustPowerUCT
>>> env = GamblerProblem(goal=10, p_win=0.6)
>>> planner = RobustPowerUCT(env, kind="tv", rho_transition=0.5, seed=0)
>>> result = planner.search(5, num_simulations=300)
>>> result.action                          # bold play: bet everything
5
>>> nominal = RobustPowerUCT(env, kind="none", seed=0).search(5, 300)   # Stochastic-Power-UCT
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import gymnasium
import numpy as np
from gymnasium import spaces

from icml25.planning._kernels import worst_case_kernel
from icml25.planning.ambiguity import Kind, check_kind, check_radius
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_array,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_probability_vector,
    check_scalar,
    check_sequence,
)

__all__ = [
    "ChanceNode",
    "DecisionNode",
    "FrozenLake",
    "FrozenLakeEnv",
    "GamblerEnv",
    "GamblerProblem",
    "GenerativeModel",
    "RandomTreeEnv",
    "RandomTreeMDP",
    "RobustPowerUCT",
    "SearchResult",
    "TabularMDP",
    "check_theory_exponents",
    "power_mean",
    "success_probability",
]


@runtime_checkable
class GenerativeModel(Protocol):
    """The nominal simulator the planner queries (rl-agents / gym style, states copied by value).

    ``step(s, a, rng)`` samples ``(s_next, reward, done)`` with ``reward`` in ``[0, r_max]``;
    ``state_key(s)`` is a hashable id that merges equal next states into one child.  A model may
    also define ``distance(s, s2) -> float`` (the Wasserstein ground metric).
    """

    def actions(self, state: Any) -> Sequence[int]:
        """The actions available in ``state``."""
        raise NotImplementedError

    def step(self, state: Any, action: int, rng: np.random.Generator) -> tuple[Any, float, bool]:
        """One sampled transition ``(s_next, reward, done)``, every draw from ``rng``."""
        raise NotImplementedError

    def is_terminal(self, state: Any) -> bool:
        """Whether ``state`` ends the episode."""
        raise NotImplementedError

    def state_key(self, state: Any) -> Hashable:
        """A hashable id of ``state``."""
        raise NotImplementedError


def power_mean(values: Sequence[float], weights: Sequence[float], p: float) -> float:
    """Weighted power mean ``(sum_i w_i x_i^p)^(1/p)`` of non-negative ``values`` (weights sum to 1).

    ``p >= 1`` as in Power-UCT (Dam et al.), where the power mean lies between the weighted mean
    (``p = 1``) and the maximum (``p = inf``, the limit of the paper's backup); ``p < 1`` is rejected.
    Large ``p`` is computed as ``m (sum_i w_i (x_i / m)^p)^(1/p)`` with ``m = max x``, so it neither
    overflows nor underflows.
    """
    values = check_array(values, "values", ndim=1, dtype=float, min_len=1)
    if np.any(values < 0):
        raise ValueError(f"values must be non-negative, got min {values.min():g}")
    weights = check_probability_vector(weights, "weights")
    check_consistent_length(values, weights, names=("values", "weights"))
    p = check_scalar(p, "p", "real", min=1.0, allow_inf=True)
    return _power_mean(values.tolist(), weights.tolist(), p)


def _power_mean(values: Sequence[float], weights: Sequence[float], p: float) -> float:
    """Unvalidated :func:`power_mean` (the tree search's backup)."""
    if math.isinf(p):
        return max(values)
    if p == 1.0:
        return math.fsum(w * x for w, x in zip(weights, values, strict=True))
    try:
        total = math.fsum(w * x**p for w, x in zip(weights, values, strict=True))
    except OverflowError:
        total = math.inf
    if _TINY < total < math.inf:  # x^p representable: the direct formula is exact to rounding
        return total ** (1.0 / p)
    top = max(values)
    if top == 0.0:
        return 0.0
    return top * math.fsum(w * (x / top) ** p for w, x in zip(weights, values, strict=True)) ** (1.0 / p)


_TINY = 1e-150  # below this sum of powers, terms may have underflowed: rescale by the maximum


def check_theory_exponents(constants: Sequence[tuple[float, float, float]], p: float) -> None:
    """Validate depth-wise constants ``(b_i, alpha_i, beta_i)`` against the paper's Table 1.

    For every depth ``i``: ``alpha_i / 2 <= b_i < alpha_i`` (i.e. ``alpha_i (1 - b_i/alpha_i) <= b_i``);
    if ``1 <= p <= 2``, ``alpha_i <= beta_i / 2``, else ``0 < alpha_i - beta_i / p < 1``; and between
    consecutive depths ``beta_i = b_{i+1} - 1``, ``alpha_i = (b_{i+1} - 1)(1 - b_{i+1} / alpha_{i+1})``.
    """
    p = check_scalar(p, "p", "real", min=1.0, allow_inf=True)
    consts = check_sequence(constants, "constants", min_len=1,
                            item=lambda c, name: tuple(check_array(c, name, shape=(3,), dtype=float).tolist()))
    for i, (b, alpha, beta) in enumerate(consts):
        if not (alpha > 0 and beta > 0 and alpha / 2 <= b < alpha):
            raise ValueError(f"depth {i}: need alpha, beta > 0 and alpha/2 <= b < alpha, got {(b, alpha, beta)}")
        if p <= 2 and not alpha <= beta / 2 + 1e-12:
            raise ValueError(f"depth {i}: with 1 <= p <= 2 need alpha <= beta/2, got {(b, alpha, beta)}")
        if p > 2 and not 0 < alpha - beta / p < 1:
            raise ValueError(f"depth {i}: with p > 2 need 0 < alpha - beta/p < 1, got {(b, alpha, beta)}")
    for i in range(len(consts) - 1):
        (_, alpha, beta), (b1, alpha1, _) = consts[i], consts[i + 1]
        if not (
            math.isclose(beta, b1 - 1, rel_tol=1e-9) and math.isclose(alpha, (b1 - 1) * (1 - b1 / alpha1), rel_tol=1e-9)
        ):
            raise ValueError(
                f"depths {i}->{i + 1}: need beta_i = b_(i+1) - 1 and alpha_i = (b_(i+1) - 1)(1 - b_(i+1)/alpha_(i+1))"
            )


@dataclass(eq=False)
class DecisionNode:
    """A state node: ``visits`` = N(s) (sum of its chance visits), ``value`` = V_hat(s)."""

    state: Any
    depth: int
    terminal: bool = False
    value: float = 0.0
    visits: int = 0
    n_leaf_returns: int = 0
    children: dict[int, ChanceNode] = field(default_factory=dict)


@dataclass(eq=False)
class ChanceNode:
    """A (state, action) node: next-state counts N(s,a,s'), reward histogram and the robust Q_hat."""

    action: int
    visits: int = 0
    q: float = 0.0
    keys: dict[Hashable, int] = field(default_factory=dict)
    counts: list[int] = field(default_factory=list)
    children: list[DecisionNode] = field(default_factory=list)
    reward_sum: float = 0.0
    reward_counts: dict[int, int] = field(default_factory=dict)
    reward_sums: dict[int, float] = field(default_factory=dict)
    dist: np.ndarray | None = None


@dataclass
class SearchResult:
    """The outcome of :meth:`RobustPowerUCT.search`.

    ``action``: greedy ``argmax_a Q_hat(root, a)``; ``root_value``: the power-mean value of the root;
    ``q_values`` / ``visit_counts``: per tried root action; ``tree``: the root :class:`DecisionNode`.
    """

    action: int
    root_value: float
    q_values: dict[int, float]
    visit_counts: dict[int, int]
    tree: DecisionNode
    num_simulations: int


class RobustPowerUCT:
    """Robust-Power-UCT (Algorithm 1 of Dam et al., 2025); Stochastic-Power-UCT when the radii are 0.

    Parameters
    ----------
    model: a :class:`GenerativeModel` (the nominal simulator).
    gamma: discount in ``(0, 1]``.
    kind: ambiguity set, ``"tv"``, ``"chi2"``, ``"wasserstein"`` or ``"none"`` (nominal backup).
    rho_transition, rho_reward: radii of the next-state and reward balls (``rho_reward = 0`` is the
        paper's transition-only setting).
    reward_bins: bins of ``[0, r_max]`` for the reward distribution (each bin is valued at the mean
        of the rewards that fell in it, so radius 0 gives the sample mean); ``None`` keeps exact
        reward values (for discrete rewards).
    r_max: rewards must lie in ``[0, r_max]`` (the power mean needs non-negative values).
    p: power-mean exponent, ``>= 1``; ``inf`` backs up the max, ``1`` the visit-weighted mean.
    c: exploration constant ``C`` (meant for values of order ``r_max``; scale it otherwise).
    bonus: ``"polynomial"`` (the paper's ``C N(s)^e_N / N(s,a)^e_n``) or ``"ucb1"``
        (``C sqrt(log N(s) / N(s,a))``, plain UCT, for reference).
    exponents: ``"constant"`` uses ``bonus_exponents = (e_N, e_n)`` at every depth (default
        ``(1/4, 1/2)``); ``"theory"`` uses ``theory_constants``, one ``(b, alpha, beta)`` per depth
        ``0..max_depth`` validated by :func:`check_theory_exponents`, with the bonus at depth ``h``
        ``C N(s)^(b_{h+1}/beta_{h+1}) / N(s,a)^(alpha_{h+1}/beta_{h+1})``.
    max_depth: tree depth ``H``; nodes at depth ``H`` are evaluated by rollouts.
    rollout_policy: ``f(state, actions, rng) -> action``; uniform random by default.
    rollout_depth, n_rollouts: length and number of rollouts per leaf evaluation.
    dist_fn: ground metric ``d(s, s2)`` for ``kind="wasserstein"``; defaults to ``model.distance``.
    seed: int, ``numpy.random.Generator`` or ``None``.
    """

    def __init__(
        self,
        model: GenerativeModel,
        gamma: float = 0.99,
        kind: Kind = "wasserstein",
        rho_transition: float = 0.5,
        rho_reward: float = 0.0,
        reward_bins: int | None = 10,
        r_max: float = 1.0,
        p: float = 2.0,
        c: float = 1.0,
        bonus: Literal["polynomial", "ucb1"] = "polynomial",
        exponents: Literal["constant", "theory"] = "constant",
        bonus_exponents: tuple[float, float] = (0.25, 0.5),
        theory_constants: Sequence[tuple[float, float, float]] | None = None,
        max_depth: int = 20,
        rollout_policy: Callable[[Any, Sequence[int], np.random.Generator], int] | None = None,
        rollout_depth: int = 20,
        n_rollouts: int = 1,
        dist_fn: Callable[[Any, Any], float] | None = None,
        seed: Seed = None,
    ) -> None:
        for name in ("actions", "step", "is_terminal", "state_key"):
            if not callable(getattr(model, name, None)):
                raise TypeError(f"model must implement the GenerativeModel protocol; missing {name}()")
        gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0, inclusive="right")
        self.kind = check_kind(kind)
        self.rho_transition = check_radius(rho_transition, "rho_transition")
        self.rho_reward = check_radius(rho_reward, "rho_reward")
        if reward_bins is not None:
            reward_bins = check_scalar(reward_bins, "reward_bins", "int", min=1)
        r_max = check_scalar(r_max, "r_max", "real", min=0.0, inclusive="neither")
        p = check_scalar(p, "p", "real", min=1.0, allow_inf=True)  # the power mean is no backup for p < 1
        c = check_scalar(c, "c", "real", min=0.0)
        check_choice(bonus, "bonus", ("polynomial", "ucb1"))
        check_choice(exponents, "exponents", ("constant", "theory"))
        max_depth = check_scalar(max_depth, "max_depth", "int", min=1)
        rollout_depth = check_scalar(rollout_depth, "rollout_depth", "int", min=0)
        n_rollouts = check_scalar(n_rollouts, "n_rollouts", "int", min=1)
        if rollout_policy is not None:
            check_callable(rollout_policy, "rollout_policy")
        if dist_fn is not None:
            check_callable(dist_fn, "dist_fn")
        if exponents == "constant":
            pair = check_sequence(bonus_exponents, "bonus_exponents")
            if len(pair) != 2:
                raise ValueError(f"bonus_exponents must be a pair (e_N, e_n), got {bonus_exponents!r}")
            e_big = check_scalar(pair[0], "bonus_exponents[0] (e_N)", "real", min=0.0)
            e_small = check_scalar(pair[1], "bonus_exponents[1] (e_n)", "real", min=0.0, inclusive="neither")
            self._exponents = [(e_big, e_small)] * max_depth
        else:
            if theory_constants is None or len(theory_constants) != max_depth + 1:
                raise ValueError(
                    f'exponents="theory" needs max_depth + 1 = {max_depth + 1} (b, alpha, beta) theory_constants'
                )
            check_theory_exponents(theory_constants, p)
            self._exponents = [(b / beta, alpha / beta) for b, alpha, beta in theory_constants[1:]]
        if dist_fn is None and kind == "wasserstein":
            dist_fn = getattr(model, "distance", None)
            if dist_fn is None and self.rho_transition > 0:
                raise ValueError('kind="wasserstein" needs dist_fn (or a model with a distance(s, s2) method)')
        self.model = model
        self.gamma = float(gamma)
        self.reward_bins = reward_bins
        self.r_max = float(r_max)
        self.p = float(p)
        self.c = float(c)
        self.bonus = bonus
        self.exponents = exponents
        self.max_depth = max_depth
        self.rollout_policy = rollout_policy
        self.rollout_depth = rollout_depth
        self.n_rollouts = n_rollouts
        self.dist_fn = dist_fn
        self.rng = as_generator(seed)

    # ----------------------------------------------------------------------------- search
    def search(self, root_state: Any, num_simulations: int) -> SearchResult:
        """Run ``num_simulations`` simulations from ``root_state`` and return the greedy action."""
        num_simulations = check_scalar(num_simulations, "num_simulations", "int", min=1)
        try:
            terminal = self.model.is_terminal(root_state)
            actions = None if terminal else list(self.model.actions(root_state))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"root_state {root_state!r} is not a state of the model: {exc}") from exc
        if terminal:
            raise ValueError(f"root_state {root_state!r} is terminal: there is nothing to plan")
        if not actions:
            raise ValueError(f"root_state {root_state!r} has no actions")
        if num_simulations < len(actions):
            warnings.warn(
                f"num_simulations={num_simulations} < {len(actions)} actions: some root actions stay untried",
                RuntimeWarning,
                stacklevel=2,
            )
        root = DecisionNode(state=root_state, depth=0)
        for _ in range(num_simulations):
            self._simulate(root, actions)
        q_values = {a: ch.q for a, ch in root.children.items()}
        best = max(q_values, key=q_values.__getitem__)
        return SearchResult(
            action=best,
            root_value=root.value,
            q_values=q_values,
            visit_counts={a: ch.visits for a, ch in root.children.items()},
            tree=root,
            num_simulations=num_simulations,
        )

    def _simulate(self, node: DecisionNode, actions: Sequence[int] | None = None) -> None:
        """One simulation below ``node`` (Algorithm 1's SimulateV): select, sample, evaluate, back up."""
        if actions is None:
            actions = list(self.model.actions(node.state))
        chance = self._select(node, actions)
        state, reward, done = self.model.step(node.state, chance.action, self.rng)
        reward = self._check_reward(reward)
        child, is_new = self._record(chance, state, reward, done or self.model.is_terminal(state), node.depth + 1)
        if not child.terminal:
            if is_new or child.depth >= self.max_depth:
                ret = np.mean([self._rollout(state) for _ in range(self.n_rollouts)])
                child.n_leaf_returns += 1
                child.value += (ret - child.value) / child.n_leaf_returns
            else:
                self._simulate(child)
        chance.visits += 1
        chance.q = self._robust_q(chance)
        node.visits += 1
        tried = node.children.values()
        node.value = _power_mean([ch.q for ch in tried], [ch.visits / node.visits for ch in tried], self.p)

    def _select(self, node: DecisionNode, actions: Sequence[int]) -> ChanceNode:
        for a in actions:
            if a not in node.children:
                chance = node.children[a] = ChanceNode(action=a)
                return chance
        if self.bonus == "ucb1":
            log_n = math.log(node.visits)
            return max(node.children.values(), key=lambda ch: ch.q + self.c * math.sqrt(log_n / ch.visits))
        e_big, e_small = self._exponents[node.depth]
        scale = self.c * node.visits**e_big
        return max(node.children.values(), key=lambda ch: ch.q + scale / ch.visits**e_small)

    def _record(
        self, chance: ChanceNode, state: Any, reward: float, terminal: bool, depth: int
    ) -> tuple[DecisionNode, bool]:
        """Update N(s,a,s') and the reward histogram; return the child node and whether it is new."""
        chance.reward_sum += reward
        b = (
            reward
            if self.reward_bins is None
            else min(int(reward / self.r_max * self.reward_bins), self.reward_bins - 1)
        )
        chance.reward_counts[b] = chance.reward_counts.get(b, 0) + 1
        chance.reward_sums[b] = chance.reward_sums.get(b, 0.0) + reward
        key = self.model.state_key(state)
        index = chance.keys.get(key)
        if index is not None:
            chance.counts[index] += 1
            return chance.children[index], False
        child = DecisionNode(state=state, depth=depth, terminal=terminal)
        chance.keys[key] = len(chance.counts)
        chance.counts.append(1)
        chance.children.append(child)
        if self.kind == "wasserstein" and self.rho_transition > 0:
            k = len(chance.children)
            grown = np.zeros((k, k))
            if chance.dist is not None:
                grown[:-1, :-1] = chance.dist
            row = [float(self.dist_fn(other.state, state)) for other in chance.children[:-1]]
            if any(not (math.isfinite(x) and x >= 0) for x in row):
                raise ValueError(f"dist_fn must return finite non-negative distances, got {row}")
            grown[-1, :-1] = grown[:-1, -1] = row
            chance.dist = grown
        return child, True

    def _robust_q(self, chance: ChanceNode) -> float:
        """Q_hat(s,a) = R_rob(s,a) + gamma * sigma_{p_hat}(V_hat) (Algorithm 1, line "backup")."""
        if self.rho_reward == 0.0 or self.kind == "none":
            r_hat = chance.reward_sum / chance.visits
        else:
            bins = list(chance.reward_counts)
            p_r = [chance.reward_counts[b] / chance.visits for b in bins]
            r_vals = np.array([chance.reward_sums[b] / chance.reward_counts[b] for b in bins])
            d_r = np.abs(r_vals[:, None] - r_vals[None, :]) / self.r_max
            r_hat = worst_case_kernel(p_r, r_vals.tolist(), self.rho_reward, self.kind, d_r)
        if len(chance.children) == 1:
            return r_hat + self.gamma * chance.children[0].value
        p = [n / chance.visits for n in chance.counts]
        v = [ch.value for ch in chance.children]
        return r_hat + self.gamma * worst_case_kernel(p, v, self.rho_transition, self.kind, chance.dist)

    def _rollout(self, state: Any) -> float:
        """Discounted return of the rollout policy from ``state`` for up to ``rollout_depth`` steps."""
        total, discount = 0.0, 1.0
        for _ in range(self.rollout_depth):
            if self.model.is_terminal(state):
                break
            actions = self.model.actions(state)
            if self.rollout_policy is None:
                action = actions[int(self.rng.integers(len(actions)))]
            else:
                action = self.rollout_policy(state, actions, self.rng)
            state, reward, done = self.model.step(state, action, self.rng)
            total += discount * self._check_reward(reward)
            discount *= self.gamma
            if done:
                break
        return total

    def _check_reward(self, reward: float) -> float:
        reward = float(reward)
        if not 0.0 <= reward <= self.r_max:
            raise ValueError(
                f"reward {reward!r} outside [0, r_max={self.r_max}]: the power mean needs non-negative "
                "values; shift/scale the rewards into [0, r_max] or raise r_max"
            )
        return reward


# --------------------------------------------------------------------------------- environments
@dataclass(frozen=True)
class TabularMDP:
    """Explicit tables for :func:`~icml25.planning.robust_value_iteration` and exact evaluation.

    ``P``: ``(S, A, S)``; ``R``: ``(S, A)`` expected rewards; ``action_mask``: ``(S, A)``;
    ``terminal``: ``(S,)``; ``dist``: ``(S, S)`` ground metric; ``action_ids[j]``: the model's action
    for column ``j``; ``goal``: ``(S,)`` terminal states that count as success.
    """

    P: np.ndarray
    R: np.ndarray
    action_mask: np.ndarray
    terminal: np.ndarray
    dist: np.ndarray
    action_ids: np.ndarray
    goal: np.ndarray


class GamblerProblem:
    """Sutton & Barto's Gambler's Problem: bet ``1..min(c, goal - c)``, win with ``p_win``.

    States are capitals ``0..goal`` (``0`` and ``goal`` terminal); the action is the bet; reward 1
    on reaching the goal.  Wasserstein ground metric (our choice, the paper gives none):
    ``|c - c'| / goal``.
    """

    def __init__(self, goal: int = 10, p_win: float = 0.6) -> None:
        self.goal = check_scalar(goal, "goal", "int", min=2)
        self.p_win = check_scalar(p_win, "p_win", "real", min=0.0, max=1.0)

    def actions(self, state: int) -> list[int]:
        """The bets ``1..min(state, goal - state)`` (none at a terminal capital)."""
        if type(state) is not int or not 0 <= state <= self.goal:
            state = check_scalar(state, "state", "int", min=0, max=self.goal)
        return list(range(1, min(state, self.goal - state) + 1))

    def step(self, state: int, action: int, rng: np.random.Generator) -> tuple[int, float, bool]:
        """Bet ``action`` at capital ``state``: win it with probability ``p_win``, else lose it."""
        if type(state) is not int or not 0 <= state <= self.goal:
            state = check_scalar(state, "state", "int", min=0, max=self.goal)
        if type(action) is not int:
            action = check_scalar(action, "action", "int")
        if not 1 <= action <= min(state, self.goal - state):
            raise ValueError(
                f"action (bet) {action} is not allowed at state (capital) {state}: "
                f"bets are 1..{min(state, self.goal - state)}"
            )
        nxt = state + action if rng.random() < self.p_win else state - action
        return nxt, float(nxt == self.goal), nxt in (0, self.goal)

    def is_terminal(self, state: int) -> bool:
        """Capital 0 (ruin) or ``goal``."""
        if type(state) is not int or not 0 <= state <= self.goal:
            state = check_scalar(state, "state", "int", min=0, max=self.goal)
        return state <= 0 or state >= self.goal

    def state_key(self, state: int) -> int:
        """The capital itself."""
        if type(state) is not int or not 0 <= state <= self.goal:
            state = check_scalar(state, "state", "int", min=0, max=self.goal)
        return state

    def distance(self, s: int, s2: int) -> float:
        """Ground metric ``|s - s2| / goal``."""
        s = check_scalar(s, "s", "int", min=0, max=self.goal)
        s2 = check_scalar(s2, "s2", "int", min=0, max=self.goal)
        return abs(s - s2) / self.goal

    def tabular(self) -> TabularMDP:
        S, A = self.goal + 1, self.goal // 2
        P, R, mask = np.zeros((S, A, S)), np.zeros((S, A)), np.zeros((S, A), bool)
        for cap in range(1, self.goal):
            for bet in self.actions(cap):
                mask[cap, bet - 1] = True
                P[cap, bet - 1, cap + bet] += self.p_win
                P[cap, bet - 1, cap - bet] += 1.0 - self.p_win
                R[cap, bet - 1] = self.p_win * (cap + bet == self.goal)
        terminal = np.zeros(S, bool)
        terminal[[0, self.goal]] = True
        states = np.arange(S)
        goal = states == self.goal
        return TabularMDP(
            P, R, mask, terminal, np.abs(states[:, None] - states[None]) / self.goal, np.arange(1, A + 1), goal
        )


class RandomTreeMDP:
    """A random stochastic tree MDP (the convergence benchmark of the reproduction).

    Depth ``depth``; every non-leaf state has ``n_actions`` actions, each leading to ``n_next``
    fresh children with Dirichlet(1) probabilities and a deterministic reward ``U[0, 1] / depth``;
    states at depth ``depth`` are terminal.  States are integers in breadth-first order (0 = root).
    The Wasserstein ground metric is the discrete one (``d = 1`` between distinct states).
    """

    def __init__(
        self, depth: int = 2, n_actions: int = 3, n_next: int = 3, seed: Seed = None
    ) -> None:
        depth, n_actions, n_next = (check_scalar(v, name, "int", min=1) for name, v in
                                    (("depth", depth), ("n_actions", n_actions), ("n_next", n_next)))
        rng = as_generator(seed)
        self.depth, self.n_actions, self.n_next = depth, n_actions, n_next
        n_internal = sum((n_actions * n_next) ** h for h in range(depth))
        self.n_states = n_internal + (n_actions * n_next) ** depth
        self.level = np.zeros(self.n_states, int)
        self.children = np.zeros((n_internal, n_actions, n_next), int)
        self.probs = rng.dirichlet(np.ones(n_next), size=(n_internal, n_actions))
        self.rewards = rng.uniform(size=(n_internal, n_actions)) / depth
        nxt = 1
        for s in range(n_internal):
            self.children[s] = np.arange(nxt, nxt + n_actions * n_next).reshape(n_actions, n_next)
            self.level[nxt : nxt + n_actions * n_next] = self.level[s] + 1
            nxt += n_actions * n_next

    def actions(self, state: int) -> list[int]:
        """``0..n_actions - 1`` (none at a leaf)."""
        return [] if self.is_terminal(state) else list(range(self.n_actions))

    def step(self, state: int, action: int, rng: np.random.Generator) -> tuple[int, float, bool]:
        """Sample a child of the non-leaf ``state`` under ``action``."""
        n_internal = self.children.shape[0]
        if type(state) is not int or not 0 <= state < n_internal:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
            if state >= n_internal:
                raise ValueError(f"state {state} is a leaf (terminal): it has no actions")
        if type(action) is not int or not 0 <= action < self.n_actions:
            action = check_scalar(action, "action", "int", min=0, max=self.n_actions - 1)
        j = int(np.searchsorted(np.cumsum(self.probs[state, action]), rng.random(), side="right"))
        nxt = int(self.children[state, action, min(j, self.n_next - 1)])
        return nxt, float(self.rewards[state, action]), self.is_terminal(nxt)

    def is_terminal(self, state: int) -> bool:
        """Whether ``state`` is a leaf (depth ``depth``)."""
        if type(state) is not int or not 0 <= state < self.n_states:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        return bool(self.level[state] >= self.depth)

    def state_key(self, state: int) -> int:
        """The state index itself."""
        if type(state) is not int or not 0 <= state < self.n_states:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        return state

    def distance(self, s: int, s2: int) -> float:
        """The discrete metric: 1 between distinct states."""
        s = check_scalar(s, "s", "int", min=0, max=self.n_states - 1)
        s2 = check_scalar(s2, "s2", "int", min=0, max=self.n_states - 1)
        return float(s != s2)

    def tabular(self) -> TabularMDP:
        S, A = self.n_states, self.n_actions
        P, R = np.zeros((S, A, S)), np.zeros((S, A))
        n_internal = self.children.shape[0]
        for s in range(n_internal):
            for a in range(A):
                P[s, a, self.children[s, a]] = self.probs[s, a]
                R[s, a] = self.rewards[s, a]
        terminal = self.level >= self.depth
        mask = np.repeat(~terminal[:, None], A, axis=1)
        return TabularMDP(P, R, mask, terminal, 1.0 - np.eye(S), np.arange(A), np.zeros(S, bool))


class FrozenLake:
    """FrozenLake with the paper's slip model: the executed action is uniformly random w.p. ``p_slip``.

    Map and action convention of gymnasium's ``FrozenLake-v1`` (0 left, 1 down, 2 right, 3 up; S
    start, F frozen, H hole, G goal); holes and the goal are terminal; reward 1 on reaching G.
    States are cell indices ``row * ncol + col``.  Ground metric (our choice): Manhattan distance
    divided by ``(nrow - 1) + (ncol - 1)``.
    """

    MAPS = {"4x4": ("SFFF", "FHFH", "FFFH", "HFFG")}
    MOVES = ((0, -1), (1, 0), (0, 1), (-1, 0))

    def __init__(self, map: str | Sequence[str] = "4x4", p_slip: float = 0.3) -> None:
        rows_ok = isinstance(map, Sequence) and len(map) > 0 and all(isinstance(r, str) for r in map)
        if not (isinstance(map, str) or rows_ok):
            raise TypeError(f"map must be a name in {tuple(self.MAPS)} or a non-empty list of strings, got {map!r}")
        rows = self.MAPS.get(map) if isinstance(map, str) else tuple(map)
        if rows is None:
            raise ValueError(f"map must be one of {tuple(self.MAPS)} or a list of equal-length strings over 'SFHG'")
        if len({len(r) for r in rows}) != 1 or any(ch not in "SFHG" for r in rows for ch in r):
            raise ValueError("map rows must have equal length and use only the letters S, F, H, G")
        if "".join(rows).count("S") != 1 or "G" not in "".join(rows):
            raise ValueError("map needs exactly one S and at least one G")
        self.p_slip = check_scalar(p_slip, "p_slip", "real", min=0.0, max=1.0)
        self.desc = np.array([list(r) for r in rows])
        self.nrow, self.ncol = self.desc.shape
        self.start = int(np.flatnonzero(self.desc.reshape(-1) == "S")[0])
        self.n_states = self.nrow * self.ncol

    def _move(self, state: int, action: int) -> int:
        r, c = divmod(state, self.ncol)
        dr, dc = self.MOVES[action]
        return min(max(r + dr, 0), self.nrow - 1) * self.ncol + min(max(c + dc, 0), self.ncol - 1)

    def actions(self, state: int) -> list[int]:
        """The four moves (0 left, 1 down, 2 right, 3 up) in every cell."""
        if type(state) is not int or not 0 <= state < self.n_states:
            check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        return [0, 1, 2, 3]

    def step(self, state: int, action: int, rng: np.random.Generator) -> tuple[int, float, bool]:
        """Move ``action`` from cell ``state``; w.p. ``p_slip`` the move is uniformly random instead."""
        if type(state) is not int or not 0 <= state < self.n_states:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        if type(action) is not int or not 0 <= action < 4:
            action = check_scalar(action, "action", "int", min=0, max=3)
        if rng.random() < self.p_slip:
            action = int(rng.integers(4))
        nxt = self._move(state, action)
        cell = self.desc.reshape(-1)[nxt]
        return nxt, float(cell == "G"), cell in "HG"

    def is_terminal(self, state: int) -> bool:
        """Holes and goals end the episode."""
        if type(state) is not int or not 0 <= state < self.n_states:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        return self.desc.reshape(-1)[state] in "HG"

    def state_key(self, state: int) -> int:
        """The cell index itself."""
        if type(state) is not int or not 0 <= state < self.n_states:
            state = check_scalar(state, "state", "int", min=0, max=self.n_states - 1)
        return state

    def distance(self, s: int, s2: int) -> float:
        """Manhattan distance divided by ``(nrow - 1) + (ncol - 1)``."""
        s = check_scalar(s, "s", "int", min=0, max=self.n_states - 1)
        s2 = check_scalar(s2, "s2", "int", min=0, max=self.n_states - 1)
        (r1, c1), (r2, c2) = divmod(s, self.ncol), divmod(s2, self.ncol)
        return (abs(r1 - r2) + abs(c1 - c2)) / (self.nrow + self.ncol - 2)

    def tabular(self) -> TabularMDP:
        S = self.nrow * self.ncol
        cells = self.desc.reshape(-1)
        terminal = np.isin(cells, ["H", "G"])
        P, R = np.zeros((S, 4, S)), np.zeros((S, 4))
        for s in np.flatnonzero(~terminal):
            for a in range(4):
                for b in range(4):
                    P[s, a, self._move(s, b)] += self.p_slip / 4 + (1 - self.p_slip) * (a == b)
                R[s, a] = P[s, a, cells == "G"].sum()
        dist = np.array([[self.distance(i, j) for j in range(S)] for i in range(S)])
        mask = np.repeat(~terminal[:, None], 4, axis=1)
        return TabularMDP(P, R, mask, terminal, dist, np.arange(4), cells == "G")


# ------------------------------------------------------------------------ gymnasium environments
class _ModelEnv(gymnasium.Env):
    """A ``gymnasium.Env`` over a tabular generative model (integer states, ``Discrete`` spaces).

    ``model`` is the wrapped :class:`GenerativeModel` (give it to :class:`RobustPowerUCT`); every
    transition is ``model.step(state, action, np_random)``, so the episode's randomness comes from
    ``reset(seed=...)``.  An episode is truncated after ``max_episode_steps`` steps.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, model: Any, n_states: int, n_actions: int, max_episode_steps: int) -> None:
        self.model = model
        self.observation_space = spaces.Discrete(n_states)
        self.action_space = spaces.Discrete(n_actions)
        self.max_episode_steps = check_scalar(max_episode_steps, "max_episode_steps", "int", min=1)
        self.state: int | None = None
        self._steps = 0

    def _initial_state(self) -> int:
        raise NotImplementedError

    def _model_action(self, state: int, action: int) -> int:
        return action

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        """Start an episode; ``seed`` (an int >= 0) reseeds ``np_random``.  ``options`` is not used."""
        if seed is not None:
            seed = check_scalar(seed, "seed", "int", min=0)
        if options is not None:
            check_instance(options, "options", dict)
        super().reset(seed=seed)
        self.state, self._steps = self._initial_state(), 0
        return self.state, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        """Apply ``action``; returns ``(observation, reward, terminated, truncated, info)``."""
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an integer in [0, {self.action_space.n - 1}], got {action!r}")
        if self.state is None or self.model.is_terminal(self.state):
            raise ValueError("the episode has ended (or never started): call reset() first")
        state, reward, done = self.model.step(self.state, self._model_action(self.state, int(action)), self.np_random)
        self.state, self._steps = int(state), self._steps + 1
        terminated = bool(done or self.model.is_terminal(self.state))
        truncated = not terminated and self._steps >= self.max_episode_steps
        return self.state, float(reward), terminated, truncated, {}


class GamblerEnv(_ModelEnv):
    """The Gambler's Problem (:class:`GamblerProblem`) as a ``gymnasium.Env``.

    Observation: the capital in ``0..goal``; action ``a`` in ``0..goal // 2 - 1`` bets ``a + 1``,
    capped at ``min(capital, goal - capital)`` (the largest allowed bet); reward 1 on reaching the
    goal.  ``start``: the initial capital in ``1..goal - 1``, or ``None`` for a uniformly random one.
    """

    def __init__(self, goal: int = 10, p_win: float = 0.6, start: int | None = None,
                 max_episode_steps: int = 1000) -> None:
        model = GamblerProblem(goal, p_win)
        self.start = None if start is None else check_scalar(start, "start", "int", min=1, max=model.goal - 1)
        super().__init__(model, model.goal + 1, model.goal // 2, max_episode_steps)

    def _initial_state(self) -> int:
        return int(self.np_random.integers(1, self.model.goal)) if self.start is None else self.start

    def _model_action(self, state: int, action: int) -> int:
        return min(action + 1, state, self.model.goal - state)


class FrozenLakeEnv(_ModelEnv):
    """Frozen Lake with the paper's slip model (:class:`FrozenLake`) as a ``gymnasium.Env``.

    Observation: the cell ``row * ncol + col``; actions 0 left, 1 down, 2 right, 3 up; reward 1 on
    reaching G; holes and G terminate; truncated after ``max_episode_steps`` (100, as gymnasium's
    ``FrozenLake-v1`` 4x4).
    """

    def __init__(self, map: str | Sequence[str] = "4x4", p_slip: float = 0.3, max_episode_steps: int = 100) -> None:
        model = FrozenLake(map, p_slip)
        super().__init__(model, model.n_states, 4, max_episode_steps)

    def _initial_state(self) -> int:
        return self.model.start


class RandomTreeEnv(_ModelEnv):
    """A :class:`RandomTreeMDP` (built from ``seed``) as a ``gymnasium.Env``: episodes start at the root
    (state 0) and terminate at a leaf after ``depth`` steps."""

    def __init__(self, depth: int = 2, n_actions: int = 3, n_next: int = 3, seed: Seed = None) -> None:
        model = RandomTreeMDP(depth, n_actions, n_next, seed=seed)
        super().__init__(model, model.n_states, model.n_actions, model.depth)

    def _initial_state(self) -> int:
        return 0


def success_probability(mdp: TabularMDP, policy: np.ndarray, start: int) -> float:
    """Exact probability of ending in a goal state from ``start`` under a deterministic ``policy``.

    ``policy[s]`` is a column of ``mdp.P`` (ignored at terminal states).  Solves the absorbing
    Markov chain ``x = P_pi x`` with ``x = 1`` on goals, ``0`` on other terminals, restricted to the
    states that can reach a terminal state (the others never succeed).
    """
    check_instance(mdp, "mdp", TabularMDP)
    S = mdp.P.shape[0]
    start = check_scalar(start, "start", "int", min=0, max=S - 1)
    policy = check_array(policy, "policy", shape=(S,))
    if policy.dtype.kind not in "iu":
        raise TypeError(f"policy must be an array of integer action columns, got dtype {policy.dtype}")
    live = ~mdp.terminal
    if not np.all(mdp.action_mask[live, np.clip(policy, 0, None)[live]]) or np.any(policy[live] < 0):
        raise ValueError("policy picks an invalid action at some non-terminal state")
    P_pi = np.zeros((S, S))
    P_pi[live] = mdp.P[np.flatnonzero(live), policy[live]]
    reach = mdp.terminal.copy()
    while True:
        grown = reach | (live & (P_pi[:, reach].sum(axis=1) > 0))
        if np.array_equal(grown, reach):
            break
        reach = grown
    transient = np.flatnonzero(reach & live)
    x = mdp.goal.astype(float)
    if transient.size:
        Q = P_pi[np.ix_(transient, transient)]
        b = P_pi[transient][:, mdp.goal].sum(axis=1)
        x[transient] = np.linalg.solve(np.eye(transient.size) - Q, b)
    return float(x[start])
