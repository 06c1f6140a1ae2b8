"""Unit tests of icml25.planning (robust_mcts): worst-case operators, robust VI, Robust-Power-UCT, models."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from icml25.planning import (
    FrozenLake,
    GamblerProblem,
    RandomTreeMDP,
    RobustPowerUCT,
    chi2_worst,
    power_mean,
    robust_expectation,
    robust_value_iteration,
    success_probability,
    tv_worst,
    w1_worst,
)
from icml25.planning.ambiguity import worst_case
from icml25.planning.robust_mcts import check_theory_exponents

KINDS = ("tv", "chi2", "wasserstein")


def _instance(rng, k):
    p = rng.dirichlet(np.ones(k))
    v = rng.uniform(-2, 3, size=k)
    x = rng.uniform(size=(k, 2))
    return p, v, np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))


# ------------------------------------------------------------------------------ operators
def test_known_answers():
    p, v = np.array([0.5, 0.3, 0.2]), np.array([1.0, 0.5, 0.0])
    assert robust_expectation(p, v, 0.1, "tv") == pytest.approx(0.55)  # 0.1 mass from v=1 onto v=0
    assert robust_expectation(p, v, 0.6, "tv") == pytest.approx(0.65 - 0.5 - 0.1 * 0.5)  # then from v=0.5
    assert robust_expectation(p, v, 0.8, "tv") == 0.0  # rho >= 1 - p_min: v_min
    two_p, two_v = np.array([0.6, 0.4]), np.array([1.0, 0.0])
    # chi2 on two points: q = p -/+ delta with delta^2 (1/0.6 + 1/0.4) = rho
    assert robust_expectation(two_p, two_v, 0.5, "chi2") == pytest.approx(0.6 - math.sqrt(0.5 * 0.24))
    d = np.array([[0.0, 0.5], [0.5, 0.0]])
    assert robust_expectation(two_p, two_v, 0.1, "wasserstein", d) == pytest.approx(0.4)  # 0.2 mass moved
    assert robust_expectation(two_p, two_v, 10.0, "wasserstein", d) == 0.0


def _linprog_tv(p, v, rho):
    k, eye = p.size, np.eye(p.size)
    a_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, k)), 0.5 * np.ones((1, k))]])
    a_eq = np.r_[np.ones(k), np.zeros(k)][None]
    res = linprog(np.r_[v, np.zeros(k)], A_ub=a_ub, b_ub=np.r_[p, -p, rho], A_eq=a_eq, b_eq=[1], method="highs")
    return res.fun  # default bounds: all variables >= 0


def _linprog_w1(p, v, rho, d):
    k = p.size
    res = linprog(np.tile(v, k), A_ub=d.reshape(1, -1), b_ub=[rho], A_eq=np.kron(np.eye(k), np.ones(k)), b_eq=p)
    return res.fun


def _slsqp_chi2(p, v, rho):
    constraints = [
        {"type": "eq", "fun": lambda q: q.sum() - 1},
        {"type": "ineq", "fun": lambda q: rho - np.sum((q - p) ** 2 / p)},
    ]
    res = minimize(lambda q: q @ v, p, method="SLSQP", bounds=[(0, 1)] * p.size, constraints=constraints,
                   options={"ftol": 1e-12, "maxiter": 1000})  # fmt: skip
    return res.fun


def test_operators_match_scipy_solvers():
    rng = np.random.default_rng(0)
    for i in range(24):
        p, v, d = _instance(rng, int(rng.integers(2, 7)))
        rho = (0.05, 0.3, 0.9)[i % 3]
        assert robust_expectation(p, v, rho, "tv") == pytest.approx(_linprog_tv(p, v, rho), abs=1e-9)
        assert robust_expectation(p, v, rho, "wasserstein", d) == pytest.approx(_linprog_w1(p, v, rho, d), abs=1e-9)
        assert robust_expectation(p, v, rho, "chi2") == pytest.approx(_slsqp_chi2(p, v, rho), abs=1e-6)


def test_batched_equals_scalar_and_invariants():
    rng = np.random.default_rng(1)
    for k in (1, 2, 3, 5, 7):
        for _ in range(6):
            p, v, d = _instance(rng, k)
            curve = {kind: [] for kind in KINDS}
            for rho in (0.0, 0.05, 0.2, 0.5, 1.0, 2.0, math.inf):
                for kind in KINDS:
                    s = robust_expectation(p, v, rho, kind, d)
                    curve[kind].append(s)
                    assert v.min() - 1e-12 <= s <= p @ v + 1e-12
                assert float(tv_worst(p, v, rho)) == pytest.approx(curve["tv"][-1], abs=1e-12)
                assert float(chi2_worst(p, v, rho)) == pytest.approx(curve["chi2"][-1], abs=1e-12)
                assert float(w1_worst(p, v, rho, d)) == pytest.approx(curve["wasserstein"][-1], abs=1e-12)
            for kind in KINDS:
                assert curve[kind][0] == float(p @ v)  # rho = 0 is exactly the nominal backup
                assert np.all(np.diff(curve[kind]) <= 1e-12)  # non-increasing in rho
            assert curve["tv"][-1] == curve["wasserstein"][-1] == v.min()


def test_batch_shapes_and_w1_large_support():
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(6), size=(4, 3))
    V = rng.uniform(size=6)
    assert tv_worst(P, V, 0.2).shape == (4, 3)
    assert chi2_worst(P, V, 0.2).shape == (4, 3)
    d = np.abs(np.arange(6)[:, None] - np.arange(6)[None]) / 5
    out = w1_worst(P, V, 0.2, d)
    assert out.shape == (4, 3)
    assert out[1, 2] == pytest.approx(worst_case(P[1, 2].tolist(), V.tolist(), 0.2, "wasserstein", d), abs=1e-12)


def test_zero_probability_entries_and_single_child():
    p, v = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    assert robust_expectation(p, v, 0.3, "tv") == pytest.approx(0.7)  # TV may move mass onto unseen entries
    assert robust_expectation(p, v, 0.3, "chi2") == 1.0  # chi-square cannot (infinite divergence)
    for kind in KINDS:
        assert robust_expectation([1.0], [0.4], 5.0, kind, np.zeros((1, 1))) == 0.4


@pytest.mark.parametrize(
    ("args", "err", "match"),
    [
        (([0.5, 0.5], [1, 0], -0.1, "tv"), ValueError, r"rho must be a real number in \[0, inf"),
        (([0.5, 0.5], [1, 0], float("nan"), "chi2"), ValueError, "rho must be a real number"),
        (([0.5, 0.5], [1, 0], "0.1", "tv"), TypeError, "rho must be a real number"),
        (([0.5, 0.6], [1, 0], 0.1, "tv"), ValueError, "sum to 1"),
        (([1.5, -0.5], [1, 0], 0.1, "tv"), ValueError, "non-negative"),
        (([0.5, 0.5], [1, 0, 2], 0.1, "tv"), ValueError, r"v must have shape \(2\)"),
        (([0.5, 0.5], [1, np.nan], 0.1, "tv"), ValueError, "v must contain only finite values"),
        (([0.5, 0.5], [1, 0], 0.1, "kl"), ValueError, "kind must be one of"),
        (([0.5, 0.5], [1, 0], 0.1, "wasserstein"), ValueError, "needs a ground metric"),
    ],
)
def test_bad_operator_input(args, err, match):
    with pytest.raises(err, match=match):
        robust_expectation(*args)


@pytest.mark.parametrize(
    ("dist", "match"),
    [
        (np.array([[0.0, 1.0], [2.0, 0.0]]), "symmetric"),
        (np.array([[0.1, 1.0], [1.0, 0.0]]), "zero diagonal"),
        (np.array([[0.0, -1.0], [-1.0, 0.0]]), "non-negative"),
        (np.zeros((3, 3)), "shape"),
    ],
)
def test_bad_distance_matrix(dist, match):
    with pytest.raises(ValueError, match=match):
        robust_expectation([0.5, 0.5], [1.0, 0.0], 0.1, "wasserstein", dist)


# --------------------------------------------------------------------------- value iteration
def _vi(mdp, kind, rho, gamma=0.99, **kw):
    return robust_value_iteration(mdp.P, mdp.R, gamma, kind, rho, mdp.dist, action_mask=mdp.action_mask,
                                  terminal=mdp.terminal, **kw)  # fmt: skip


def test_gambler_value_iteration_gives_bold_and_timid_play():
    mdp = GamblerProblem(10, 0.6).tabular()
    execs = [GamblerProblem(10, pe).tabular() for pe in (0.3, 0.4, 0.5, 0.6, 0.7)]
    _, _, nominal = _vi(mdp, "none", 0.0)
    assert [round(success_probability(e, nominal, 5), 3) for e in execs] == [0.058, 0.193, 0.5, 0.84, 0.975]
    for kind in KINDS:
        values, Q, policy = _vi(mdp, kind, 0.5)
        assert mdp.action_ids[policy[5]] == 5  # bold play
        assert [success_probability(e, policy, 5) for e in execs] == pytest.approx([0.3, 0.4, 0.5, 0.6, 0.7])
        nominal_v = _vi(mdp, "none", 0.0)[0]
        assert np.all(values <= nominal_v + 1e-12)
        assert np.all(np.isneginf(Q[~mdp.action_mask]))


def test_tree_value_iteration_is_backward_induction():
    env = RandomTreeMDP(depth=2, n_actions=2, n_next=2, seed=3)
    mdp = env.tabular()
    V, _, _ = _vi(mdp, "tv", 0.3, gamma=1.0)
    for s in range(env.children.shape[0] - 1, -1, -1):
        q = [env.rewards[s, a] + worst_case(env.probs[s, a].tolist(), V[env.children[s, a]].tolist(), 0.3, "tv")
             for a in range(2)]  # fmt: skip
        assert V[s] == pytest.approx(max(q), abs=1e-12)
    assert _vi(mdp, "tv", 0.0)[0] == pytest.approx(_vi(mdp, "none", 0.0)[0])
    assert _vi(mdp, "chi2", 0.3, support="all")[0] == pytest.approx(_vi(mdp, "chi2", 0.3)[0])
    assert np.all(_vi(mdp, "tv", 0.3, support="all")[0] <= _vi(mdp, "tv", 0.3)[0] + 1e-12)


def test_bad_value_iteration_input():
    mdp = GamblerProblem(6, 0.5).tabular()
    with pytest.raises(ValueError, match="P must be a 3-d array"):
        robust_value_iteration(mdp.P[0], mdp.R, 0.9, "tv", 0.1)
    with pytest.raises(ValueError, match=r"P must have shape \(S, A, S\)"):
        robust_value_iteration(mdp.P[:, :, :3], mdp.R, 0.9, "tv", 0.1)
    with pytest.raises(ValueError, match="R must have shape"):
        robust_value_iteration(mdp.P, mdp.R[:, :1], 0.9, "tv", 0.1)
    with pytest.raises(ValueError, match="gamma"):
        _vi(mdp, "tv", 0.1, gamma=1.5)
    with pytest.raises(ValueError, match="support"):
        _vi(mdp, "tv", 0.1, support="some")
    with pytest.raises(ValueError, match="probability vector"):
        robust_value_iteration(mdp.P, mdp.R, 0.9, "tv", 0.1)  # invalid bets have all-zero rows
    with pytest.raises(ValueError, match="rho must be a real number"):
        _vi(mdp, "tv", -1.0)
    loop = np.ones((1, 1, 1))
    with pytest.raises(RuntimeError, match="did not reach"):
        robust_value_iteration(loop, np.ones((1, 1)), 1.0, "none", 0.0, max_iter=50)


# ------------------------------------------------------------------------------ the planner
def _all_chance_nodes(node):
    for chance in node.children.values():
        yield chance
        for child in chance.children:
            yield from _all_chance_nodes(child)


def test_backups_are_robust_bellman_and_power_mean():
    env = RandomTreeMDP(depth=2, n_actions=3, n_next=3, seed=4)
    planner = RobustPowerUCT(env, kind="chi2", rho_transition=0.4, p=3.0, seed=0)
    res = planner.search(0, 400)
    root = res.tree
    for chance in _all_chance_nodes(root):
        p = np.array(chance.counts) / chance.visits
        v = np.array([ch.value for ch in chance.children])
        r_hat = chance.reward_sum / chance.visits
        assert chance.q == pytest.approx(r_hat + 0.99 * robust_expectation(p, v, 0.4, "chi2"), abs=1e-12)
    q = np.array([c.q for c in root.children.values()])
    w = np.array([c.visits for c in root.children.values()]) / root.visits
    assert res.root_value == pytest.approx(np.dot(w, q**3) ** (1 / 3), abs=1e-12)
    assert sum(res.visit_counts.values()) == 400
    assert res.action == max(res.q_values, key=res.q_values.get)


def test_power_mean_limits():
    x, w = [0.2, 0.9, 0.5], [0.5, 0.2, 0.3]
    assert power_mean(x, w, 1.0) == pytest.approx(np.dot(w, x))
    assert power_mean(x, w, math.inf) == 0.9
    assert power_mean(x, w, 1.0) < power_mean(x, w, 2.0) < power_mean(x, w, 50.0) < 0.9


def test_root_value_converges_to_robust_dp():
    env = RandomTreeMDP(depth=2, n_actions=2, n_next=3, seed=5)
    mdp = env.tabular()
    target = _vi(mdp, "tv", 0.3)[0][0]
    errors = [abs(RobustPowerUCT(env, kind="tv", rho_transition=0.3, c=0.25, seed=s).search(0, n).root_value - target)
              for s in range(4) for n in (100, 3000)]  # fmt: skip
    small, large = np.mean(errors[0::2]), np.mean(errors[1::2])
    assert large < 0.02 and large < small


def test_radius_zero_is_stochastic_power_uct_and_deterministic():
    env = GamblerProblem(10, 0.6)
    a = RobustPowerUCT(env, kind="tv", rho_transition=0.0, seed=7).search(4, 300)
    b = RobustPowerUCT(env, kind="none", seed=7).search(4, 300)
    c = RobustPowerUCT(env, kind="none", seed=7).search(4, 300)
    assert a.q_values == b.q_values == c.q_values and a.root_value == b.root_value
    d = RobustPowerUCT(env, kind="none", seed=8).search(4, 300)
    assert d.q_values != b.q_values


def test_gambler_robust_planner_plays_bold():
    env = GamblerProblem(10, 0.6)
    for kind in KINDS:
        assert RobustPowerUCT(env, kind=kind, rho_transition=0.5, seed=0).search(5, 300).action == 5


class _Bandit:
    """One step, Bernoulli(0.7) reward, terminal outcome: Q(s, a) is the robust reward alone."""

    def actions(self, state):
        return [0] if state == "s" else []

    def step(self, state, action, rng):
        return "end", float(rng.random() < 0.7), True

    def is_terminal(self, state):
        return state == "end"

    def state_key(self, state):
        return state


def test_reward_ambiguity():
    res = RobustPowerUCT(_Bandit(), kind="tv", rho_transition=0.0, rho_reward=0.2, seed=0).search("s", 500)
    chance = res.tree.children[0]
    assert res.q_values[0] == pytest.approx(chance.reward_sum / chance.visits - 0.2)
    exact = RobustPowerUCT(_Bandit(), kind="tv", rho_reward=0.2, reward_bins=None, seed=0).search("s", 500)
    assert exact.q_values[0] == pytest.approx(res.q_values[0])
    nominal = RobustPowerUCT(_Bandit(), kind="tv", rho_reward=0.0, seed=0).search("s", 500)
    assert nominal.q_values[0] == pytest.approx(chance.reward_sum / chance.visits)


def test_theory_exponents():
    consts = [(0.5, 2 * (1 - 3 / 4.4), 2.0), (3.0, 4.4, 11.0), (12.0, 20.0, 40.0)]
    check_theory_exponents(consts, 2.0)
    env = RandomTreeMDP(depth=2, seed=0)
    planner = RobustPowerUCT(env, kind="tv", exponents="theory", theory_constants=consts, max_depth=2, seed=0)
    assert planner._exponents == [pytest.approx((3 / 11, 0.4)), pytest.approx((0.3, 0.5))]
    planner.search(0, 50)
    with pytest.raises(ValueError, match="alpha/2 <= b < alpha"):
        check_theory_exponents([(3.0, 2.0, 8.0)], 2.0)
    with pytest.raises(ValueError, match="alpha <= beta/2"):
        check_theory_exponents([(1.5, 2.0, 3.0)], 2.0)
    with pytest.raises(ValueError, match="beta_i = b_"):
        check_theory_exponents([consts[0], (3.5, 4.4, 11.0), consts[2]], 2.0)
    with pytest.raises(ValueError, match="0 < alpha - beta/p < 1"):
        check_theory_exponents([(1.5, 2.0, 40.0)], 4.0)
    with pytest.raises(ValueError, match="theory_constants"):
        RobustPowerUCT(env, exponents="theory", max_depth=2)


def test_ucb1_bonus_and_rollouts():
    env = GamblerProblem(10, 0.6)
    res = RobustPowerUCT(env, kind="none", p=1.0, bonus="ucb1", c=1.4, n_rollouts=3, seed=0).search(3, 200)
    assert res.action in env.actions(3)
    assert 0.0 <= res.root_value <= 1.0


def test_bad_planner_input():
    env = GamblerProblem(10, 0.6)
    with pytest.raises(ValueError, match=r"p must be a real number in \[1, inf"):
        RobustPowerUCT(env, p=0.5)
    with pytest.raises(TypeError, match="max_depth must be an integer >= 1"):
        RobustPowerUCT(env, max_depth=2.0)
    with pytest.raises(ValueError, match="rho_transition must be a real number"):
        RobustPowerUCT(env, rho_transition=-0.1)
    with pytest.raises(ValueError, match="kind must be one of"):
        RobustPowerUCT(env, kind="kl")
    with pytest.raises(ValueError, match="gamma"):
        RobustPowerUCT(env, gamma=0.0)
    with pytest.raises(ValueError, match="needs dist_fn"):
        RobustPowerUCT(_Bandit(), kind="wasserstein", rho_transition=0.1)
    with pytest.raises(TypeError, match="GenerativeModel"):
        RobustPowerUCT(object())
    planner = RobustPowerUCT(env, kind="tv", seed=0)
    with pytest.raises(ValueError, match="terminal"):
        planner.search(10, 10)
    with pytest.raises(ValueError, match="num_simulations"):
        planner.search(5, 0)
    with pytest.raises(ValueError, match="no actions"):
        RobustPowerUCT(_NoActions(), kind="tv").search("s", 5)
    with pytest.warns(RuntimeWarning, match="untried"):
        res = planner.search(5, 2)
    assert res.action in (1, 2)
    with pytest.raises(ValueError, match=r"outside \[0, r_max"):
        RobustPowerUCT(env, kind="tv", r_max=0.5, seed=0).search(9, 20)


class _NoActions(_Bandit):
    def actions(self, state):
        return []


# --------------------------------------------------------------------------------- models
def test_success_probability_is_gamblers_ruin():
    mdp = GamblerProblem(10, 0.4).tabular()
    timid = np.where(mdp.terminal, -1, 0)  # always bet 1
    r = 0.6 / 0.4
    assert success_probability(mdp, timid, 5) == pytest.approx((1 - r**5) / (1 - r**10))
    with pytest.raises(ValueError, match="invalid action"):
        success_probability(mdp, np.where(mdp.terminal, -1, 4), 5)  # bet 5 at capital 1


def test_frozen_lake_model():
    env = FrozenLake(p_slip=0.0)
    assert env._move(0, 2) == 1 and env._move(0, 1) == 4 and env._move(0, 0) == 0 and env._move(0, 3) == 0
    mdp = FrozenLake(p_slip=0.4).tabular()
    live = ~mdp.terminal
    assert np.allclose(mdp.P[live].sum(-1), 1.0)
    assert mdp.P[0, 2, 1] == pytest.approx(0.6 + 0.1)
    assert env.step(14, 2, np.random.default_rng(0)) == (15, 1.0, True)
    _, _, pol = _vi(FrozenLake(p_slip=0.0).tabular(), "none", 0.0)
    assert success_probability(FrozenLake(p_slip=0.0).tabular(), pol, 0) == 1.0
    with pytest.raises(ValueError, match="map"):
        FrozenLake(map="9x9")
    with pytest.raises(ValueError, match="S, F, H, G"):
        FrozenLake(map=["SFX", "FFG"])


def test_model_sampling_and_bad_input():
    env = RandomTreeMDP(depth=1, n_actions=1, n_next=3, seed=0)
    rng = np.random.default_rng(0)
    draws = [env.step(0, 0, rng)[0] for _ in range(4000)]
    freq = np.bincount(draws, minlength=4)[1:] / 4000
    assert freq == pytest.approx(env.probs[0, 0], abs=0.03)
    with pytest.raises(ValueError, match="depth"):
        RandomTreeMDP(depth=0)
    with pytest.raises(ValueError, match="goal"):
        GamblerProblem(goal=1)
    with pytest.raises(ValueError, match="p_win"):
        GamblerProblem(p_win=1.5)
    with pytest.raises(ValueError, match="not allowed"):
        GamblerProblem(10).step(3, 4, rng)


# ------------------------------------------------------------------- issue 19 regressions
def test_power_mean_large_p_does_not_overflow():
    assert power_mean([3.0, 1.0], [0.5, 0.5], 2000.0) == pytest.approx(3.0 * 0.5 ** (1 / 2000))
    assert power_mean([0.5, 0.1], [0.5, 0.5], 5000.0) == pytest.approx(0.5 * 0.5 ** (1 / 5000))  # no underflow
    assert power_mean([0.0, 0.0], [0.5, 0.5], 2000.0) == 0.0
    x, w = [0.2, 0.9, 0.5], [0.5, 0.2, 0.3]
    assert power_mean(x, w, 3.0) == pytest.approx(np.dot(w, np.power(x, 3)) ** (1 / 3), rel=1e-15)


def test_planner_backup_with_large_p():
    res = RobustPowerUCT(GamblerProblem(10, 0.6), kind="none", p=5000.0, seed=0).search(5, 200)
    q = list(res.q_values.values())
    assert 0.99 * max(q) <= res.root_value <= max(q) + 1e-12  # the unscaled backup underflowed to 0


def test_power_mean_rejects_invalid_input():
    with pytest.raises(ValueError, match=r"p must be a real number in \[1, inf"):
        power_mean([0.2, 0.9], [0.5, 0.5], 0.5)  # Power-UCT's power mean needs p >= 1
    with pytest.raises(ValueError, match="weights must sum to 1"):
        power_mean([0.2, 0.9], [0.5, 0.6], 2.0)
    with pytest.raises(ValueError, match="values must be non-negative"):
        power_mean([-0.2, 0.9], [0.5, 0.5], 2.0)
    with pytest.raises(ValueError, match="values and weights"):
        power_mean([0.2, 0.9, 0.1], [0.5, 0.5], 2.0)


def test_batched_operators_validate_probabilities():
    with pytest.raises(ValueError, match="p must sum to 1"):
        tv_worst(np.array([1.0, 1.0]), np.array([1.0, 0.0]), 0.1)
    with pytest.raises(ValueError, match="p must sum to 1"):
        chi2_worst(np.array([[0.5, 0.5], [1.0, 1.0]]), np.array([1.0, 0.0]), 0.1)
    with pytest.raises(ValueError, match="v must"):
        w1_worst(np.array([0.5, 0.5]), np.array([1.0, np.nan]), 0.1, np.ones((2, 2)) - np.eye(2))
    p = np.array([[0.5, 0.5], [0.2, 0.8]])
    assert tv_worst(p, np.array([1.0, 0.0]), 0.1) == pytest.approx([0.4, 0.1])  # batched rows still work


def test_gymnasium_environments_wrap_the_models():
    from gymnasium.utils.env_checker import check_env

    from icml25.planning import FrozenLakeEnv, GamblerEnv, RandomTreeEnv

    for env in (GamblerEnv(start=5), FrozenLakeEnv(p_slip=0.2), RandomTreeEnv(seed=0)):
        check_env(env, skip_render_check=True)
        first = [env.reset(seed=3)[0]] + [env.step(0)[0] for _ in range(1)]
        again = [env.reset(seed=3)[0]] + [env.step(0)[0] for _ in range(1)]
        assert first == again
    env = GamblerEnv(goal=10, p_win=0.6, start=5)
    assert env.reset(seed=0)[0] == 5 and env.step(4)[0] in (0, 10)  # bet 5 = bold play ends it
    result = RobustPowerUCT(env.model, kind="tv", rho_transition=0.5, seed=0).search(5, 300)
    assert result.action == 5
    with pytest.raises(ValueError, match="action must be"):
        env.step(7.5)


def test_model_methods_reject_bad_states():
    env = GamblerProblem(10, 0.6)
    with pytest.raises(ValueError, match="state must be"):
        env.actions(-1)
    with pytest.raises(TypeError, match="state must be"):
        env.is_terminal("a")
    with pytest.raises(ValueError, match="action"):
        env.step(3, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="root_state"):
        RobustPowerUCT(env, kind="tv", seed=0).search(11, 10)
    with pytest.raises(ValueError, match="state 5 is a leaf"):
        RandomTreeMDP(depth=1, n_actions=2, n_next=3, seed=0).step(5, 0, np.random.default_rng(0))
