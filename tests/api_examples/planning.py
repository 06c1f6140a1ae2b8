"""Valid calls of ``icml25.planning`` (robust_mcts: worst-case operators, robust VI, Robust-Power-UCT, MDPs)."""

import functools

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import planning as pl

RNG = {"rng": "a live numpy Generator handed over by the planner at every step (per-step protocol hook)"}


@functools.cache
def _gambler():
    return pl.GamblerProblem(goal=6, p_win=0.6)


@functools.cache
def _frozen():
    return pl.FrozenLake()


@functools.cache
def _tree():
    return pl.RandomTreeMDP(depth=2, n_actions=2, n_next=2, seed=0)


@functools.cache
def _gambler_tabular():
    return _gambler().tabular()


def _planner():
    return pl.RobustPowerUCT(_gambler(), kind="tv", rho_transition=0.3, max_depth=3, rollout_depth=3, seed=0)


def _pv():
    return {"p": np.array([0.5, 0.3, 0.2]), "v": np.array([1.0, 0.5, 0.0])}


def _dist():
    return np.abs(np.subtract.outer(np.arange(3.0), np.arange(3.0))) / 2.0


_BATCHED = {"p": "ndim", "v": "ndim"}  # the batched operators take (..., S) rows: an extra leading axis is a batch
_THEORY = [(0.5, 2 * (1 - 3 / 4.4), 2.0), (3.0, 4.4, 11.0), (12.0, 20.0, 40.0)]


def _env_methods(prefix, factory, state, action, s2):
    return {
        f"{prefix}.actions": Example(lambda **kw: factory().actions(**kw), {"state": state}),
        f"{prefix}.step": Example(lambda **kw: factory().step(**kw),
                                  lambda: {"state": state, "action": action, "rng": np.random.default_rng(0)},
                                  skip=RNG),
        f"{prefix}.is_terminal": Example(lambda **kw: factory().is_terminal(**kw), {"state": state}),
        f"{prefix}.state_key": Example(lambda **kw: factory().state_key(**kw), {"state": state}),
        f"{prefix}.distance": Example(lambda **kw: factory().distance(**kw), {"s": state, "s2": s2}),
    }


EXAMPLES = {
    # records the search builds and returns
    "icml25.planning.ChanceNode": Exempt("record"),
    "icml25.planning.DecisionNode": Exempt("record"),
    "icml25.planning.SearchResult": Exempt("record"),
    "icml25.planning.TabularMDP": Exempt("record"),
    # the protocol
    "icml25.planning.GenerativeModel": Exempt("abstract"),
    "icml25.planning.GenerativeModel.actions": Exempt("abstract"),
    "icml25.planning.GenerativeModel.step": Exempt("abstract"),
    "icml25.planning.GenerativeModel.is_terminal": Exempt("abstract"),
    "icml25.planning.GenerativeModel.state_key": Exempt("abstract"),
    # models
    "icml25.planning.GamblerProblem": Example(pl.GamblerProblem, {"goal": 6, "p_win": 0.6}, nonneg=["p_win"]),
    **_env_methods("icml25.planning.GamblerProblem", _gambler, 3, 2, 5),
    "icml25.planning.FrozenLake": Example(pl.FrozenLake, {"map": "4x4", "p_slip": 0.3}, nonneg=["p_slip"]),
    **_env_methods("icml25.planning.FrozenLake", _frozen, 4, 1, 9),
    "icml25.planning.RandomTreeMDP": Example(pl.RandomTreeMDP, {"depth": 2, "n_actions": 2, "n_next": 2, "seed": 0},
                                             positive=["depth", "n_actions", "n_next"]),
    **_env_methods("icml25.planning.RandomTreeMDP", _tree, 1, 1, 2),
    # gymnasium environments
    "icml25.planning.GamblerEnv": Example(pl.GamblerEnv, {"goal": 6, "p_win": 0.6, "start": 3},
                                          nonneg=["p_win"], positive=["start", "max_episode_steps"],
                                          allow={"start": "none"}),
    "icml25.planning.FrozenLakeEnv": Example(pl.FrozenLakeEnv, {"map": "4x4", "p_slip": 0.3},
                                             nonneg=["p_slip"], positive=["max_episode_steps"]),
    "icml25.planning.RandomTreeEnv": Example(pl.RandomTreeEnv, {"depth": 2, "n_actions": 2, "n_next": 2, "seed": 0},
                                             positive=["depth", "n_actions", "n_next"]),
    # reset/step are defined once on the shared base of the three environments
    "icml25.planning.FrozenLakeEnv.reset": Example(lambda **kw: pl.FrozenLakeEnv().reset(**kw), {"seed": 0}),
    "icml25.planning.FrozenLakeEnv.step": Example(
        lambda **kw: _reset(pl.FrozenLakeEnv()).step(**kw), {"action": 1}),
    # the planner
    "icml25.planning.RobustPowerUCT": Example(
        pl.RobustPowerUCT, lambda: {"model": _gambler(), "kind": "tv", "rho_transition": 0.3, "seed": 0},
        nonneg=["rho_transition", "rho_reward", "c"], positive=["r_max", "p", "max_depth", "n_rollouts"],
        allow={"reward_bins": "none"}),
    "icml25.planning.RobustPowerUCT.search": Example(lambda **kw: _planner().search(**kw),
                                                     {"root_state": 3, "num_simulations": 30},
                                                     positive=["num_simulations"]),
    "icml25.planning.power_mean": Example(pl.power_mean, lambda: {"values": [3.0, 1.0], "weights": [0.5, 0.5],
                                                                  "p": 2.0}, positive=["p"],
                                          paired=[("values", "weights")]),
    "icml25.planning.check_theory_exponents": Example(pl.check_theory_exponents,
                                                      lambda: {"constants": list(_THEORY), "p": 2.0},
                                                      positive=["p"]),
    "icml25.planning.success_probability": Example(
        pl.success_probability,
        lambda: {"mdp": _gambler_tabular(), "policy": np.array([-1, 0, 1, 2, 1, 0, -1]), "start": 3}),
    # operators
    "icml25.planning.tv_worst": Example(pl.tv_worst, lambda: {**_pv(), "rho": 0.1}, nonneg=["rho"], allow=_BATCHED),
    "icml25.planning.chi2_worst": Example(pl.chi2_worst, lambda: {**_pv(), "rho": 0.1}, nonneg=["rho"],
                                          allow=_BATCHED),
    "icml25.planning.w1_worst": Example(pl.w1_worst, lambda: {**_pv(), "rho": 0.1, "dist": _dist()}, nonneg=["rho"],
                                        allow=_BATCHED),
    "icml25.planning.worst_case": Example(pl.worst_case, lambda: {**_pv(), "rho": 0.1, "kind": "wasserstein",
                                                                  "dist": _dist()}, nonneg=["rho"]),
    "icml25.planning.robust_expectation": Example(pl.robust_expectation,
                                                  lambda: {**_pv(), "rho": 0.1, "kind": "wasserstein",
                                                           "dist": _dist()}, nonneg=["rho"]),
    "icml25.planning.robust_value_iteration": Example(
        pl.robust_value_iteration,
        lambda: {"P": _gambler_tabular().P, "R": _gambler_tabular().R, "gamma": 0.9, "kind": "wasserstein", "rho": 0.2,
                 "dist": _gambler_tabular().dist, "action_mask": _gambler_tabular().action_mask,
                 "terminal": _gambler_tabular().terminal},
        positive=["gamma", "max_iter"], nonneg=["rho", "tol"]),
}


def _reset(env):
    env.reset(seed=0)
    return env
