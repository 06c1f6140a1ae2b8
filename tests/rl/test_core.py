"""The RL core: replay buffer, tabular Q, DQN / TD3 / PPO on tiny gymnasium runs, wrappers, registration."""

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import icml25.rl as rl
from icml25.rl import (
    DeceptiveRooms,
    DQNAgent,
    DQNArgs,
    FixedSeedReset,
    PPOAgent,
    PPOArgs,
    ReplayBuffer,
    TabularQ,
    TD3Agent,
    TD3Args,
    evaluate_policy,
    train_dqn,
    train_ppo,
    train_td3,
)


def test_every_registered_environment_passes_check_env():
    for env_id, (_, max_steps) in rl.ENVIRONMENTS.items():
        env = gymnasium.make(env_id)
        check_env(env.unwrapped, skip_render_check=True)
        assert env.spec.max_episode_steps == max_steps
        env.close()


def test_deceptive_rooms_geometry_and_rewards():
    env = DeceptiveRooms()
    obs, _ = env.reset(seed=0)
    assert obs == env.start
    _, r, term, trunc, _ = env.step(2)
    assert (r, term) == (0.0, False)
    _, r, term, _, _ = env.step(2)  # two steps down: the distractor
    assert (r, term) == (0.1, True)
    with pytest.raises(ValueError, match="reset"):
        env.step(0)
    # the shortest path to the goal: right along row 3 through the door, down through the second door
    env.reset()
    env.reset()
    plan = [1] * 4 + [2, 2] + [1] * 4 + [2] * 8 + [1] * 2
    rewards = [env.step(a)[1:4] for a in plan]
    assert len(plan) == 20 and rewards[-1] == (1.0, True, False) and sum(r for r, _, _ in rewards) == 1.0
    with pytest.raises(ValueError, match="action"):
        env.step(7)


def test_deceptive_rooms_truncates_at_the_horizon():
    env = DeceptiveRooms(max_episode_steps=5)
    env.reset(seed=1)
    outs = [env.step(3) for _ in range(5)]
    assert [o[3] for o in outs] == [False] * 4 + [True]


def test_replay_buffer_wraps_and_samples_reproducibly():
    obs_space, act_space = gymnasium.spaces.Box(-1, 1, (2,)), gymnasium.spaces.Discrete(3)
    rb = ReplayBuffer(4, obs_space, act_space, seed=0)
    for i in range(6):
        rb.add(np.full(2, i, np.float32), np.full(2, i + 1, np.float32), i % 3, float(i), i == 5)
    assert len(rb) == 4 and rb.full
    assert sorted(rb.rewards.tolist()) == [2.0, 3.0, 4.0, 5.0]
    a = rb.sample(16)
    b = ReplayBuffer(4, obs_space, act_space, seed=0)
    for i in range(6):
        b.add(np.full(2, i, np.float32), np.full(2, i + 1, np.float32), i % 3, float(i), i == 5)
    assert np.array_equal(a.rewards, b.sample(16).rewards)
    assert np.all(a.next_observations[:, 0] == a.observations[:, 0] + 1)
    with pytest.raises(ValueError, match="obs"):
        rb.add(np.zeros(3), np.zeros(2), 0, 0.0, False)
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(2, obs_space, act_space).sample(1)


def test_tabular_q_update_is_the_q_learning_rule():
    env = DeceptiveRooms()
    q = TabularQ(env.observation_space, env.action_space, learning_rate=0.5, gamma=0.9, seed=0)
    q.q[20] = [0.0, 2.0, 1.0, 0.0]
    batch = rl.ReplayBufferSamples(np.array([14]), np.array([2]), np.array([20]), np.array([0.0], np.float32),
                                   np.array([1.0], np.float32))
    q.update(batch, batch.rewards)
    assert q.q[14, 2] == pytest.approx(0.5 * (1.0 + 0.9 * 2.0))
    assert q.act(20) == 1
    with pytest.raises(TypeError, match="action_space"):
        TabularQ(env.observation_space, gymnasium.spaces.Box(-1, 1, (1,)))
    with pytest.raises(ValueError, match="rewards"):
        q.update(batch, np.zeros(2))


def _dqn_args(**kw):
    return DQNArgs(total_timesteps=400, learning_starts=100, buffer_size=400, batch_size=32, train_frequency=4,
                   target_network_frequency=100, hidden=(32, 32), **kw)


def test_dqn_short_run_is_deterministic_and_learns_something():
    a1, r1 = train_dqn(gymnasium.make("CartPole-v1"), _dqn_args(), seed=3)
    a2, r2 = train_dqn(gymnasium.make("CartPole-v1"), _dqn_args(), seed=3)
    assert np.array_equal(r1, r2) and len(r1) > 5
    for p, q in zip(a1.q_network.parameters(), a2.q_network.parameters(), strict=True):
        assert torch.equal(p, q)
    assert a1.n_updates == len(range(104, 400, 4))
    obs = gymnasium.make("CartPole-v1").reset(seed=0)[0]
    assert a1.act(obs) in (0, 1)


def test_dqn_update_moves_q_towards_the_td_target():
    env = gymnasium.make("CartPole-v1")
    agent = DQNAgent(env.observation_space, env.action_space, _dqn_args(learning_rate=1e-2), seed=0)
    obs = np.zeros((8, 4), np.float32)
    batch = rl.ReplayBufferSamples(obs, np.zeros(8, np.int64), obs, np.ones(8, np.float32), np.ones(8, np.float32))
    losses = [agent.update(batch, np.full(8, 5.0))["td_loss"] for _ in range(50)]
    assert losses[-1] < 0.1 * losses[0]
    with pytest.raises(TypeError, match="action_space"):
        DQNAgent(env.observation_space, gymnasium.spaces.Box(-1, 1, (1,)))


def test_dqn_leaves_the_global_torch_rng_alone():
    state = torch.get_rng_state()
    env = gymnasium.make("CartPole-v1")
    DQNAgent(env.observation_space, env.action_space, seed=0)
    assert torch.equal(state, torch.get_rng_state())


def test_td3_short_run_is_deterministic_and_respects_bounds():
    args = TD3Args(total_timesteps=250, learning_starts=150, batch_size=16, hidden=16)
    a1, r1 = train_td3(gymnasium.make("Pendulum-v1"), args, seed=0)
    a2, r2 = train_td3(gymnasium.make("Pendulum-v1"), args, seed=0)
    assert np.array_equal(r1, r2) and r1.shape == (1, 2)
    assert a1.n_updates == 99
    obs = gymnasium.make("Pendulum-v1").reset(seed=0)[0]
    for _ in range(20):
        action = a1.act(obs, explore=True)
        assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
    with pytest.raises(TypeError, match="action_space"):
        TD3Agent(gymnasium.spaces.Box(-1, 1, (3,)), gymnasium.spaces.Discrete(2))


def test_ppo_short_run_is_deterministic_and_moves_the_policy():
    args = PPOArgs(total_timesteps=512, num_envs=2, num_steps=64, update_epochs=2)
    a1, r1 = train_ppo(lambda: gymnasium.make("CartPole-v1"), args, seed=0)
    a2, r2 = train_ppo(lambda: gymnasium.make("CartPole-v1"), args, seed=0)
    assert np.array_equal(r1, r2) and len(r1) > 5 and np.all(r1[:, 1] >= 1)
    fresh = PPOAgent(gymnasium.spaces.Box(-5, 5, (4,)),
                     gymnasium.spaces.Discrete(2), seed=0)
    x = torch.zeros(1, 4)
    assert not torch.equal(fresh.actor(x), a1.actor(x))
    assert torch.equal(a1.actor(x), a2.actor(x))
    with pytest.raises(ValueError, match="num_minibatches"):
        PPOArgs(num_envs=1, num_steps=6, num_minibatches=4)
    with pytest.raises(TypeError, match="action_space"):
        PPOAgent(gymnasium.spaces.Box(-1, 1, (3,)), gymnasium.spaces.Box(-1, 1, (1,)))


def test_fixed_seed_reset_holds_a_minigrid_layout():
    pytest.importorskip("minigrid")
    env = FixedSeedReset(gymnasium.make("MiniGrid-DoorKey-5x5-v0"), seed=7)
    grids = [env.reset(seed=s)[0]["image"] for s in (0, 1, 2)]
    assert all(np.array_equal(grids[0], g) for g in grids[1:])
    free = gymnasium.make("MiniGrid-DoorKey-5x5-v0")
    assert not all(np.array_equal(free.reset(seed=0)[0]["image"], free.reset(seed=s)[0]["image"]) for s in (1, 2, 3))


def test_evaluate_policy_returns_episode_statistics():
    stats = evaluate_policy(DeceptiveRooms(), lambda obs: 2, n_episodes=3)
    assert stats.returns.tolist() == [0.1] * 3 and stats.lengths.tolist() == [2] * 3 and stats.terminated.all()
    stuck = evaluate_policy(DeceptiveRooms(max_episode_steps=7), lambda obs: 0, n_episodes=1)
    assert stuck.lengths.tolist() == [7] and not stuck.terminated.any()
