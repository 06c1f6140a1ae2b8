"""Hyper's pieces: the repositioning schedule, the intrinsic rewards, and the three exploration schemes."""

import gymnasium
import numpy as np
import pytest
import torch

from icml25.rl import (
    RND,
    CountBonus,
    Curiosity,
    DeceptiveRooms,
    Decouple,
    Disagreement,
    DQNAgent,
    DQNArgs,
    Hyper,
    TabularQ,
    c_for_mean_fraction,
    truncated_geometric,
    truncated_geometric_mean,
)


def _tabular(env, seed):
    return TabularQ(env.observation_space, env.action_space, seed=seed)


@pytest.mark.parametrize("c", [0.0, 0.5, 0.8, 0.95, 0.99])
@pytest.mark.parametrize("horizon", [1, 20, 100])
def test_truncated_geometric_matches_its_analytic_law(c, horizon):
    draws = truncated_geometric(c, horizon, size=20_000, seed=0)
    assert draws.min() >= 0 and draws.max() <= horizon
    support = np.arange(horizon + 1)
    p = (1 - c) * c**support
    p /= p.sum()
    assert truncated_geometric_mean(c, horizon) == pytest.approx(float((support * p).sum()), rel=1e-9, abs=1e-12)
    expected = np.bincount(np.minimum(support, 10), weights=p, minlength=11)
    freq = np.bincount(np.minimum(draws, 10), minlength=11) / len(draws)
    assert np.abs(freq - expected).max() < 0.015


def test_schedule_limits_and_the_mean_fraction_solver():
    assert truncated_geometric(0.0, 50, size=100, seed=1).max() == 0
    assert truncated_geometric_mean(0.999999, 100) == pytest.approx(50.0, rel=1e-3)  # c -> 1: uniform on 0..H
    for frac in (0.0, 0.1, 0.3, 0.45):
        c = c_for_mean_fraction(frac, 100)
        assert truncated_geometric_mean(c, 100) == pytest.approx(frac * 100, abs=1e-6)
    with pytest.raises(ValueError, match="frac"):
        c_for_mean_fraction(0.5, 100)
    with pytest.raises(ValueError, match="c"):
        truncated_geometric(1.0, 10)
    with pytest.raises(ValueError, match="horizon"):
        truncated_geometric(0.5, 0)
    assert truncated_geometric(0.9, 30, seed=4) == truncated_geometric(0.9, 30, seed=4)


def test_count_bonus_counts_next_states_or_state_actions():
    bonus = CountBonus()
    obs, act, nxt = np.array([1, 1, 2]), np.array([0, 0, 1]), np.array([5, 5, 6])
    assert bonus.compute(obs, act, nxt).tolist() == [1.0, 1.0, 1.0]
    bonus.update(obs, act, nxt)
    assert bonus.compute(obs, act, nxt) == pytest.approx([2**-0.5, 2**-0.5, 1.0])
    sa = CountBonus(mode="state_action", power=1.0)
    sa.update(obs, act, nxt)
    assert sa.compute(np.array([1, 2, 3]), np.array([0, 1, 0]), np.array([0, 0, 0])).tolist() == [0.5, 1.0, 1.0]
    with pytest.raises(ValueError, match="mode"):
        CountBonus(mode="episode")


@pytest.mark.parametrize("kind", ["rnd", "disagreement"])
def test_network_bonuses_shrink_on_what_they_have_seen_and_are_seeded(kind):
    def make(seed):
        if kind == "rnd":
            return RND(obs_dim=3, hidden=32, out_dim=8, learning_rate=3e-2, seed=seed)
        return Disagreement(obs_dim=3, act_dim=2, n_actions=2, hidden=32, learning_rate=3e-2, seed=seed)

    rng = np.random.default_rng(0)
    seen = rng.normal(size=(64, 3)).astype(np.float32)
    action = rng.integers(0, 2, size=64)
    state = torch.get_rng_state()
    b1, b2 = make(0), make(0)
    assert torch.equal(state, torch.get_rng_state())
    before = b1.compute(seen, action, seen + 0.1).mean()
    for _ in range(60):
        b1.update(seen, action, seen + 0.1)
        b2.update(seen, action, seen + 0.1)
    after = b1.compute(seen, action, seen + 0.1)
    assert np.all(np.isfinite(after)) and after.mean() < 0.5 * before
    assert np.allclose(after, b2.compute(seen, action, seen + 0.1))
    with pytest.raises(ValueError, match="next_obs"):
        b1.compute(seen, action, seen[:3])


def test_curiosity_with_beta_zero_is_plain_q_learning_and_locks_onto_the_distractor():
    history = Curiosity(_tabular, CountBonus(), beta=0.0, seed=0).train(DeceptiveRooms(), 5000, eval_every=1000)
    assert history.returns[-1] == pytest.approx(0.1)
    assert history.explore_fraction[-1] == 1.0 and set(history.reposition_lengths) == {0}


def test_hyper_repositions_with_the_exploitation_policy_and_decouple_never_does():
    hyper = Hyper(_tabular, CountBonus(), beta=1.0, c=0.9, seed=0)
    h = hyper.train(DeceptiveRooms(), 3000, eval_every=1000)
    assert np.mean(h.reposition_lengths) > 2 and h.explore_fraction[-1] < 1.0
    assert hyper.policy is hyper.exploit and hyper.exploit is not hyper.explore
    d = Decouple(_tabular, CountBonus(), beta=1.0, seed=0).train(DeceptiveRooms(), 3000, eval_every=1000)
    assert set(d.reposition_lengths) == {0} and d.explore_fraction[-1] == 1.0
    again = Hyper(_tabular, CountBonus(), beta=1.0, c=0.9, seed=0).train(DeceptiveRooms(), 3000, eval_every=1000)
    assert again.returns == h.returns and again.reposition_lengths == h.reposition_lengths


def test_hyper_exploitation_learner_never_sees_the_bonus():
    hyper = Hyper(_tabular, CountBonus(), beta=100.0, c=0.5, learning_starts=200, seed=0)
    hyper.train(DeceptiveRooms(), 2000, eval_every=2000)
    assert hyper.exploit.q.max() <= 1.0 + 1e-9  # extrinsic returns are at most 1
    assert hyper.explore.q.max() > 10.0


def test_hyper_runs_a_dqn_learner_with_rnd_on_a_flat_minigrid():
    minigrid = pytest.importorskip("minigrid")
    from minigrid.wrappers import ImgObsWrapper

    env = gymnasium.wrappers.FlattenObservation(ImgObsWrapper(gymnasium.make("MiniGrid-Empty-5x5-v0")))
    args = DQNArgs(total_timesteps=300, learning_starts=50, batch_size=16, hidden=(16, 16))
    agent = Hyper(lambda e, s: DQNAgent(e.observation_space, e.action_space, args, seed=s),
                  RND(obs_dim=env.observation_space.shape[0], hidden=16, out_dim=8, seed=0),
                  beta=1.0, learning_starts=50, batch_size=16, horizon=env.unwrapped.max_steps, seed=0)
    h = agent.train(env, 300, eval_every=150)
    assert minigrid and len(h.returns) == 2 and all(np.isfinite(h.returns))


def test_bad_input_is_rejected_clearly():
    with pytest.raises(ValueError, match="beta"):
        Hyper(_tabular, CountBonus(), beta=-1.0)
    with pytest.raises(ValueError, match="c"):
        Hyper(_tabular, CountBonus(), c=1.0)
    with pytest.raises(TypeError, match="curiosity"):
        Hyper(_tabular, object())
    with pytest.raises(TypeError, match="observation_space"):
        Hyper(_tabular, CountBonus(), horizon=10).train(gymnasium.make("CartPole-v1").unwrapped, 10)
    no_limit = gymnasium.make("CartPole-v1", max_episode_steps=None).unwrapped
    with pytest.raises(ValueError, match="horizon"):
        Hyper(lambda e, s: DQNAgent(e.observation_space, e.action_space, seed=s), RND(4)).train(no_limit, 10)
    with pytest.raises(RuntimeError, match="train"):
        Hyper(_tabular, CountBonus()).act(0)
