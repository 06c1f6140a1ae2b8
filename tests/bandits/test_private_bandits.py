"""Private bandits: the batched Laplace conversion, its baseline, private expert advice and the audit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml25.bandits.base import (
    BernoulliEnv,
    ExpertAdviceEnv,
    FixedArm,
    LossMatrixEnv,
    TsallisINF,
    expert_regret,
    pseudo_regret,
    run_bandit,
    run_experts,
)
from icml25.bandits.private_bandits import (
    BatchedExpertsAsArms,
    BatchedPrivateBandit,
    PerRoundLaplaceBandit,
    PrivateEXP4,
    default_batch_size,
    laplace_noise,
    two_batch_audit,
    two_batch_output_distribution,
)


class Recorder(FixedArm):
    """A fixed-arm base that records what the conversion releases to it."""

    def __init__(self, n_arms: int, arm: int = 0) -> None:
        super().__init__(n_arms, arm)
        self.received: list[tuple[int, float]] = []

    def update(self, arm: int, loss: float) -> None:
        self.received.append((arm, loss))


def zero_noise(scales: list[float]):
    def noise_fn(rng, scale):
        scales.append(scale)
        return 0.0

    return noise_fn


@pytest.mark.parametrize(("eps", "tau"), [(2.0, 1), (1.0, 1), (0.3, 4), (0.1, 10), (0.001, 1000)])
def test_default_batch_size_is_ceil_one_over_eps(eps, tau):
    assert default_batch_size(eps) == tau


def test_noise_scale_is_one_over_batch_length_times_eps():
    scales: list[float] = []
    learner = BatchedPrivateBandit(Recorder(2), horizon=25, epsilon=0.1, noise_fn=zero_noise(scales))
    assert (learner.batch_size, learner.n_batches) == (10, 3)
    assert [learner.batch_length(j) for j in range(3)] == [10, 10, 5]  # short last batch
    np.testing.assert_allclose([learner.noise_scale(j) for j in range(3)], [1.0, 1.0, 2.0])
    learner.run(LossMatrixEnv(np.zeros((25, 2))), np.random.default_rng(0))
    np.testing.assert_allclose(scales, [1 / (10 * 0.1), 1 / (10 * 0.1), 1 / (5 * 0.1)])
    per_round = PerRoundLaplaceBandit(Recorder(2), horizon=3, epsilon=0.5)
    assert per_round.batch_size == 1 and per_round.noise_scale(0) == 2.0


def test_released_values_are_batch_means_plus_noise():
    losses = np.array([[1, 0], [0, 0], [1, 0], [1, 0], [0, 1]], dtype=float)
    base = Recorder(2, arm=0)
    learner = BatchedPrivateBandit(base, horizon=5, epsilon=0.5, noise_fn=lambda rng, scale: 0.25)
    actions = learner.run(LossMatrixEnv(losses), np.random.default_rng(0))
    assert actions.tolist() == [0] * 5
    np.testing.assert_allclose([v for _, v in base.received], [0.5 + 0.25, 1.0 + 0.25, 0.0 + 0.25])
    assert learner.released == base.received


def test_streaming_interface_matches_run_on_a_deterministic_environment():
    losses = np.random.default_rng(3).random((53, 4))
    env = LossMatrixEnv(losses)
    fast = BatchedPrivateBandit(TsallisINF(4), horizon=53, epsilon=0.2)
    fast_actions = fast.run(env, np.random.default_rng(11))
    slow = BatchedPrivateBandit(TsallisINF(4), horizon=53, epsilon=0.2)
    slow_actions = run_bandit(slow, env, np.random.default_rng(11))
    np.testing.assert_array_equal(fast_actions, slow_actions)
    assert fast.released == slow.released
    assert len(set(fast_actions[:5].tolist())) == 1  # one arm per batch of tau = 5


def test_eps_at_least_one_reduces_to_per_round_noise():
    env = BernoulliEnv([0.3, 0.6, 0.6], horizon=400)
    batched = BatchedPrivateBandit(TsallisINF(3), horizon=400, epsilon=2.0).run(env, np.random.default_rng(5))
    per_round = PerRoundLaplaceBandit(TsallisINF(3), horizon=400, epsilon=2.0).run(
        env, np.random.default_rng(5)
    )
    np.testing.assert_array_equal(batched, per_round)


def test_single_arm_is_trivial():
    env = BernoulliEnv([0.4], horizon=50)
    actions = BatchedPrivateBandit(TsallisINF(1), horizon=50, epsilon=0.1).run(env, np.random.default_rng(0))
    assert pseudo_regret(env, actions) == pytest.approx(0.0, abs=1e-9)


def test_batched_conversion_learns_where_per_round_noise_struggles():
    horizon, eps = 20_000, 0.05
    env = BernoulliEnv([0.25, 0.75, 0.75, 0.75, 0.75], horizon=horizon)
    batched = [
        pseudo_regret(
            env, BatchedPrivateBandit(TsallisINF(5), horizon, eps).run(env, np.random.default_rng(s))
        )
        for s in range(5)
    ]
    uniform = env.mean_totals().mean() - env.mean_totals().min()
    assert np.mean(batched) < 0.5 * uniform


def test_two_batch_output_distribution_known_answer():
    # all-zero losses: arm 0 is kept iff 0 + Laplace(1/(2 eps)) <= 1/2, i.e. with prob F(eps) of Laplace(0, 1)
    for eps in (0.2, 0.5, 1.0):
        probs = two_batch_output_distribution(np.zeros((4, 2)), eps)
        assert set(probs) == {(0, 0, 0, 0), (0, 0, 1, 1)}
        assert probs[(0, 0, 0, 0)] == pytest.approx(1 - 0.5 * math.exp(-eps), abs=1e-12)
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-12)


def test_audit_shows_eps_dp_tightly_and_catches_undercalibrated_noise():
    for eps in (0.25, 1.0):
        result = two_batch_audit(eps)
        assert result.max_log_ratio <= eps + 1e-9
        assert result.max_log_ratio >= eps - 1e-9  # the Laplace mechanism's bound is attained
        assert result.n_sequences == 256 and result.n_pairs == 256 * 4 * 3 // 2
    control = two_batch_audit(0.5, noise_multiplier=0.5)
    assert control.max_log_ratio == pytest.approx(1.0, abs=1e-9) and control.max_log_ratio > 0.5


def test_batched_experts_as_arms_plays_the_chosen_expert():
    advice = np.array([[0, 2], [1, 2], [1, 0], [2, 1]])  # (T = 4, N = 2)
    losses = np.array([[0, 1, 0], [1, 0, 1], [0, 0, 1], [1, 0, 0]], dtype=float)
    base = Recorder(2, arm=1)
    learner = BatchedExpertsAsArms(base, n_actions=3, horizon=4, epsilon=0.5, noise_fn=lambda r, s: 0.0)
    actions = run_experts(learner, ExpertAdviceEnv(advice, losses), np.random.default_rng(0))
    assert actions.tolist() == [2, 2, 0, 1]
    np.testing.assert_allclose([v for _, v in base.received], [0.0 + 1.0 / 2, 0.0 + 0.0 / 2])
    assert [e for e, _ in base.received] == [1, 1]


def test_private_exp4_feeds_clipped_noisy_losses():
    scales: list[float] = []
    learner = PrivateEXP4(2, 2, horizon=10, epsilon=0.5, eta=1.0, clip=1.0, noise_fn=zero_noise(scales))
    assert learner.clip == 1.0 and learner.exp4.clip == 1.0
    action = learner.act(np.random.default_rng(0), np.array([0, 1]))
    learner.update(action, 1.0)  # rescaled (1 + 1) / 3, estimate / q = 0.5
    assert scales == [2.0]
    expected = np.zeros(2)
    expected[action] = -(2 / 3) / 0.5
    np.testing.assert_allclose(learner.exp4.log_weights, expected)
    default = PrivateEXP4(4, 3, horizon=100, epsilon=0.5)
    assert default.clip == pytest.approx(math.log(300) / 0.5)


def test_private_expert_algorithms_run_and_are_deterministic():
    rng = np.random.default_rng(0)
    advice, losses = rng.integers(3, size=(300, 4)), rng.integers(2, size=(300, 3)).astype(float)
    env = ExpertAdviceEnv(advice, losses)
    for make in (
        lambda: BatchedExpertsAsArms(TsallisINF(4), 3, 300, 0.2),
        lambda: PrivateEXP4(4, 3, 300, 0.2),
    ):
        first = run_experts(make(), env, np.random.default_rng(1))
        np.testing.assert_array_equal(first, run_experts(make(), env, np.random.default_rng(1)))
        assert np.isfinite(expert_regret(env, first))


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="epsilon"):
        BatchedPrivateBandit(TsallisINF(2), 10, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        BatchedPrivateBandit(TsallisINF(2), 10, math.inf)
    with pytest.raises(TypeError, match="epsilon"):
        default_batch_size("0.1")
    with pytest.raises(ValueError, match="batch_size"):
        BatchedPrivateBandit(TsallisINF(2), 10, 0.5, batch_size=0)
    with pytest.raises(TypeError, match="base"):
        BatchedPrivateBandit(object(), 10, 0.5)
    with pytest.raises(TypeError, match="noise_fn"):
        BatchedPrivateBandit(TsallisINF(2), 10, 0.5, noise_fn=3)
    learner = BatchedPrivateBandit(TsallisINF(2), 2, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="follow act"):
        learner.update(0, 0.5)
    arm = learner.act(rng)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        learner.update(arm, 1.5)  # sensitivity assumption broken
    with pytest.raises(ValueError, match="not played"):
        learner.update(1 - arm, 0.5)
    learner.update(arm, 0.5)
    learner.update(learner.act(rng), 0.5)
    with pytest.raises(ValueError, match="horizon exceeded"):
        learner.act(rng)
    with pytest.raises(ValueError, match="fresh"):
        learner.run(LossMatrixEnv(np.zeros((2, 2))), rng)
    with pytest.raises(ValueError, match="horizon"):
        BatchedPrivateBandit(TsallisINF(2), 5, 1.0).run(LossMatrixEnv(np.zeros((4, 2))), rng)
    with pytest.raises(ValueError, match="advice rows must sum to 1"):
        BatchedExpertsAsArms(TsallisINF(2), 2, 5, 1.0).act(rng, np.array([[0.5, 0.4], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="even"):
        two_batch_audit(1.0, horizon=3)
    with pytest.raises(ValueError, match="too many"):
        two_batch_audit(1.0, loss_values=(0.0, 0.5, 1.0), n_arms=3)


# ------------------------------------------------------------------- issue 19 regressions
def test_private_learners_reject_bad_input_clearly():
    from icml25.bandits import BatchedExpertsAsArms, TsallisINF

    learner = BatchedPrivateBandit(TsallisINF(2), horizon=7, epsilon=0.5)
    with pytest.raises(ValueError, match=r"j must be an integer in \[0, 3\]"):
        learner.batch_length(-1)
    with pytest.raises(TypeError, match=r"j must be an integer"):
        learner.noise_scale("1")
    with pytest.raises(TypeError, match="env must be"):
        learner.run("env", seed=0)
    experts = BatchedExpertsAsArms(TsallisINF(2), n_actions=3, horizon=8, epsilon=0.5)
    with pytest.raises(ValueError, match="advice"):
        experts.act(np.random.default_rng(0), np.ones((2, 2)))
    assert experts.private.t == 0 and experts.private._rng is None  # bad advice is rejected before the batch opens
    with pytest.raises(ValueError, match=r"loss_values\[0\] must be a real number in \[0, 1\]"):
        two_batch_audit(1.0, loss_values=(float("nan"), 1.0), horizon=2)


def test_laplace_noise_rejects_a_bad_generator_or_scale():
    with pytest.raises(TypeError, match="rng"):
        laplace_noise(None, 1.0)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="scale"):
            laplace_noise(np.random.default_rng(0), bad)
    assert laplace_noise(np.random.default_rng(0), 2.0) == float(np.random.default_rng(0).laplace(0.0, 2.0))
