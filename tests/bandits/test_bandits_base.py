"""The shared bandit protocol: base algorithms, environments and regret helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml25.bandits.base import (
    EXP3,
    EXP4,
    UCB,
    BanditAlgorithm,
    BernoulliEnv,
    ExpertAdviceEnv,
    ExpertAlgorithm,
    FixedArm,
    FollowTheLeader,
    LossMatrixEnv,
    TsallisINF,
    Uniform,
    check_loss,
    expert_regret,
    pseudo_regret,
    regret,
    regret_curve,
    run_bandit,
    run_experts,
    switching_means,
)

MEANS = [0.25, 0.75, 0.75, 0.75, 0.75]


def test_algorithms_follow_the_protocols():
    for algo in (TsallisINF(3), EXP3(3, 10), UCB(3), FollowTheLeader(3), Uniform(3), FixedArm(3)):
        assert isinstance(algo, BanditAlgorithm)
    assert isinstance(EXP4(4, 3, 10), ExpertAlgorithm)


def test_exp3_probabilities_after_a_fixed_loss_sequence():
    # hand computation: eta = 0.5, gamma = 0.3; (arm 0, loss 1) then (arm 1, loss 0.5)
    algo = EXP3(3, horizon=10, eta=0.5, gamma=0.3)
    np.testing.assert_allclose(algo.probabilities, [1 / 3] * 3)
    algo.update(0, 1.0)
    np.testing.assert_allclose(algo.probabilities, [0.170257295, 0.414871352, 0.414871352], atol=1e-9)
    algo.update(1, 0.5)
    np.testing.assert_allclose(algo.probabilities, [0.188217714, 0.316417919, 0.495364367], atol=1e-9)


def test_exp3_clip_rescales_noisy_losses():
    clipped = EXP3(2, horizon=5, eta=1.0, gamma=0.0, clip=1.0)
    clipped.update(0, -7.0)  # clipped to -1, rescaled to 0: no change
    np.testing.assert_allclose(clipped.probabilities, [0.5, 0.5])
    clipped.update(0, 2.0)  # rescaled to (2 + 1) / 3 = 1, estimate 1 / 0.5 = 2
    np.testing.assert_allclose(clipped.log_weights, [-2.0, 0.0])


def test_exp4_weights_after_one_round_and_both_advice_forms_agree():
    one_hot = np.array([[1.0, 0.0], [0.0, 1.0]])
    for advice in (np.array([0, 1]), one_hot):
        algo = EXP4(2, 2, horizon=5, eta=1.0)
        np.testing.assert_allclose(algo.action_distribution(advice), [0.5, 0.5])
        action = algo.act(np.random.default_rng(0), advice)
        algo.update(action, 1.0 if action == 0 else 0.0)
        expected = [0.119202922, 0.880797078] if action == 0 else [0.5, 0.5]
        np.testing.assert_allclose(algo.expert_weights, expected, atol=1e-9)


def test_tsallis_inf_solution_satisfies_its_definition():
    for n_arms in (2, 5, 40):  # 40 > 32 takes the NumPy path
        algo = TsallisINF(n_arms)
        np.testing.assert_allclose(algo.probabilities, np.full(n_arms, 1 / n_arms))
        rng = np.random.default_rng(n_arms)
        for _ in range(30):
            arm = algo.act(rng)
            algo.update(arm, rng.laplace(0.5, 3.0))  # noisy, often negative losses are accepted
        p, L, eta = algo.probabilities, algo.cum_loss_estimates, algo.eta
        assert p.sum() == pytest.approx(1.0) and np.all(p > 0)
        x = L - 2.0 / (eta * np.sqrt(p))  # p_a = 4 / (eta (L_a - x))^2 with one common x
        np.testing.assert_allclose(x, x[0], atol=1e-6 * (1 + abs(x[0])))


def test_tsallis_inf_is_shift_invariant_and_learns():
    a, b = TsallisINF(3), TsallisINF(3)
    for arm, loss in ((0, 0.2), (1, 0.9), (2, 0.4)):
        a.update(arm, loss)
        b.update(arm, loss)
    b.cum_loss_estimates += 123.0
    b.probabilities = b._solve()
    np.testing.assert_allclose(a.probabilities, b.probabilities, atol=1e-9)
    env = BernoulliEnv(MEANS, horizon=3000)
    uniform = env.mean_totals().mean() - env.mean_totals().min()
    assert pseudo_regret(env, run_bandit(TsallisINF(5), env, np.random.default_rng(0))) < 0.15 * uniform


def test_fixed_arm_regret_is_known():
    losses = np.array([[1, 0], [1, 0], [0, 1], [1, 0]], dtype=float)
    env = LossMatrixEnv(losses)
    actions = run_bandit(FixedArm(2, arm=0), env, np.random.default_rng(0))
    assert actions.tolist() == [0, 0, 0, 0]
    assert regret(actions, losses) == 2.0  # 3 - 1
    assert pseudo_regret(env, actions) == 2.0
    np.testing.assert_allclose(regret_curve(env, actions), [1, 2, 1, 2])
    bern = BernoulliEnv([0.25, 0.75], horizon=100)
    assert pseudo_regret(bern, np.ones(100, dtype=int)) == pytest.approx(50.0)


def test_ucb_tries_every_arm_first_then_exploits():
    env = LossMatrixEnv(np.tile([0.0, 1.0, 1.0], (60, 1)))
    actions = run_bandit(UCB(3), env, np.random.default_rng(0))
    assert actions[:3].tolist() == [0, 1, 2]
    assert np.mean(actions[3:] == 0) > 0.8
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        UCB(2).update(0, 1.5)


def test_follow_the_leader_is_deterministic_with_a_prior():
    ftl = FollowTheLeader(2, prior=0.5)
    assert ftl.act(np.random.default_rng(0)) == 0
    ftl.update(0, 0.8)
    assert ftl.act(np.random.default_rng(1)) == 1
    ftl.update(1, 0.9)
    assert ftl.act(np.random.default_rng(2)) == 0


def test_switching_environment_segments_and_block_sums():
    means = switching_means(3, 4)
    assert means.shape == (4, 3) and means[3].tolist() == [0.25, 0.75, 0.75]
    env = BernoulliEnv(means, horizon=100)
    assert env.switch_every == 25 and env.segment(26) == 1
    np.testing.assert_allclose(env.mean_totals(), [2 * 25 * 0.25 + 2 * 25 * 0.75, 62.5, 62.5])
    deterministic = BernoulliEnv([[0.0, 1.0], [1.0, 0.0]], horizon=10)  # switches at t = 5
    assert deterministic.sample_sum(0, 3, 8, np.random.default_rng(0)) == 3.0
    assert deterministic.sample_sum(1, 0, 10, np.random.default_rng(0)) == 5.0


def test_expert_environment_and_regret():
    advice = np.array([[0, 1], [0, 1], [1, 1]])  # (T = 3, N = 2) recommended actions
    losses = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    env = ExpertAdviceEnv(advice, losses)
    np.testing.assert_allclose(env.expert_totals, [2.0, 2.0])
    dist = np.eye(2)[advice]  # the same advice as distributions
    np.testing.assert_allclose(ExpertAdviceEnv(dist, losses).expert_totals, [2.0, 2.0])
    assert expert_regret(env, np.array([0, 1, 0])) == -2.0
    actions = run_experts(EXP4(2, 2, horizon=3), env, np.random.default_rng(0))
    assert actions.shape == (3,)


def test_same_seed_same_run():
    env = BernoulliEnv(MEANS, horizon=500)
    for make in (lambda: TsallisINF(5), lambda: EXP3(5, 500), lambda: Uniform(5)):
        first = run_bandit(make(), env, np.random.default_rng(7))
        second = run_bandit(make(), env, np.random.default_rng(7))
        np.testing.assert_array_equal(first, second)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="n_arms"):
        TsallisINF(0)
    with pytest.raises(ValueError, match="eta0"):
        TsallisINF(3, eta0=0.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        EXP3(2, 10).update(0, 1.5)
    with pytest.raises(ValueError, match="horizon exceeded"):
        algo = EXP3(2, 1)
        algo.update(0, 0.5)
        algo.update(0, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        EXP3(2, 10, gamma=2.0)
    with pytest.raises(ValueError, match="arm must be"):
        TsallisINF(2).update(2, 0.5)
    with pytest.raises(TypeError, match=r"arm must be an integer in \[0, 1\]"):
        TsallisINF(2).update(1.0, 0.5)
    with pytest.raises(TypeError, match="n_arms must be an integer >= 1"):
        UCB("3")
    with pytest.raises(TypeError, match="loss must be a"):
        check_loss("0.5")
    with pytest.raises(ValueError, match="finite"):
        check_loss(math.nan, bounded=False)
    with pytest.raises(ValueError, match="advice rows must sum to 1"):
        EXP4(2, 2, 5).act(np.random.default_rng(0), np.array([[0.5, 0.6], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        EXP4(2, 2, 5).act(np.random.default_rng(0), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="follow act"):
        EXP4(2, 2, 5).update(0, 0.5)
    with pytest.raises(ValueError, match="probabilities"):
        BernoulliEnv([0.5, 1.5], horizon=10)
    with pytest.raises(ValueError, match="rounds must satisfy"):
        BernoulliEnv([0.5, 0.5], horizon=10).sample_sum(0, 5, 11, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        LossMatrixEnv(np.array([[2.0, 0.0]]))
    with pytest.raises(ValueError, match="arms"):
        run_bandit(TsallisINF(3), BernoulliEnv([0.5, 0.5], horizon=10), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"actions must have shape \(4\)"):
        regret(np.zeros(3, dtype=int), np.zeros((4, 2)))


def test_runners_take_a_seed_and_the_shared_helpers_are_public():
    env = BernoulliEnv([0.25, 0.75, 0.75], horizon=200)
    by_int = run_bandit(TsallisINF(3), env, seed=5)
    by_generator = run_bandit(TsallisINF(3), env, np.random.default_rng(5))
    np.testing.assert_array_equal(by_int, by_generator)
    with pytest.raises(TypeError, match="seed must be an int"):
        run_bandit(TsallisINF(3), env, seed="5")
    from icml25.bandits import check_advice, sample_index

    assert sample_index(np.random.default_rng(0), np.array([0.0, 1.0, 0.0])) == 1
    np.testing.assert_array_equal(check_advice(np.array([0, 2]), 2, 3), [0, 2])
    with pytest.raises(ValueError, match="advice must recommend actions"):
        check_advice(np.array([0, 3]), 2, 3)


# ------------------------------------------------------------------- issue 19 regressions
def test_environment_and_runner_inputs_are_validated():
    from icml25.bandits import check_advice, regret_curve, sample_index, switching_means

    env = BernoulliEnv([0.2, 0.8], horizon=10)
    with pytest.raises(TypeError, match="start must be"):
        env.sample_sum(0, "0", 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="t and arms must have the same shape"):
        env.mean_loss(np.arange(4), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match=r"t must lie in \[0, 9\]"):
        env.segment(np.array([3, 10]))
    with pytest.raises(ValueError, match="p must contain only finite values"):
        sample_index(np.random.default_rng(0), np.array([np.nan, 0.5, 0.5]))  # used to return the last index
    with pytest.raises(TypeError, match="p must be"):
        sample_index(np.random.default_rng(0), None)
    with pytest.raises(TypeError, match="n_experts must be"):
        check_advice(np.array([0, 1]), "2", 3)
    with pytest.raises(TypeError, match="env must be"):
        regret_curve(None, np.zeros(10, int))
    with pytest.raises(TypeError, match="algorithm must be"):
        run_bandit("UCB", env, seed=0)
    with pytest.raises(ValueError, match=r"best must be a real number in \[0, 1\]"):
        switching_means(2, 2, best=float("nan"))
    with pytest.raises(ValueError, match=r"t must be an integer in \[0, 3\]"):
        ExpertAdviceEnv(np.array([[0, 1]] * 4), np.full((4, 2), 0.5)).loss(-1, 0)  # used to read the last round
