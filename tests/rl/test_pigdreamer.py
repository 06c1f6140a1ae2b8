"""PIGDreamer: the environments (check_env, registration, Safety-Gymnasium conventions), the tabular ACPOMDP tools,
the asymmetric world model and its alignment, the augmented Lagrangian, the deployable policy and the agent."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import icml25.rl  # noqa: F401 - registers the environments
from icml25.rl import (
    AsymWorldModel,
    AugmentedLagrangian,
    DeployablePolicy,
    HiddenHazardCorridor,
    PIGDreamer,
    PrivilegedHazardNav,
    SafetyGymAdapter,
    exact_policy_eval,
    td0_evaluate,
)

TINY = {"deter": 8, "stoch": 2, "classes": 3, "hidden": 8}


@pytest.mark.parametrize("make", [lambda: PrivilegedHazardNav(seed=0), lambda: PrivilegedHazardNav(sensor_range=np.inf),
                                  lambda: PrivilegedHazardNav(obs_noise=0.1, n_hazards=3),
                                  lambda: HiddenHazardCorridor(),
                                  lambda: gym.make("icml25/PrivilegedHazardNav-v0").unwrapped,
                                  lambda: gym.make("icml25/HiddenHazardCorridor-v0").unwrapped])
def test_check_env_passes(make):
    env = make()
    check_env(env, skip_render_check=True)
    env.close()


def test_hazard_nav_follows_safety_gymnasium_conventions():
    env = PrivilegedHazardNav(seed=0, episode_len=50)
    obs, info = env.reset()
    assert obs.shape == (14,) and info["privileged"].shape == (env.priv_dim,) == (21,)
    total_cost, truncated = 0.0, False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.3], np.float32))
        assert not terminated and isinstance(info["cost"], float) and info["cost"] in (0.0, 1.0)
        total_cost += info["cost"]
        assert info["cost"] == float(info["privileged"][3 * env.n_hazards] <= 0)
    assert env.t == 50


def test_hazard_nav_sensor_range_hides_far_hazards():
    near, far = PrivilegedHazardNav(sensor_range=0.1, seed=3), PrivilegedHazardNav(sensor_range=np.inf, seed=3)
    o_near, info = near.reset()
    o_far, _ = far.reset()
    assert np.array_equal(o_near[:6], o_far[:6])
    if info["privileged"][3 * near.n_hazards] > 0.1:
        assert not o_near[6:].any()
    assert o_far[6:].any()


def test_corridor_model_matches_simulation():
    env = HiddenHazardCorridor(slip=0.0, seed=0)
    model = env.model()
    policy = np.tile([1.0, 0.0], (16, 1))  # always the left branch
    v_cost = exact_policy_eval(model["P"], model["cost"], model["terminal"], policy, gamma=1.0 - 1e-9)
    assert v_cost[0] == pytest.approx(1.0) and v_cost[1] == pytest.approx(0.0)  # layout 0: cost on the left
    for layout in (0, 1):
        env.reset(seed=layout)
        env.layout = layout
        cost = sum(env.step(0)[4]["cost"] for _ in range(6))
        assert cost == pytest.approx(v_cost[layout])


def test_td0_converges_to_the_exact_value_on_a_chain():
    keys = np.array([0, 1, 2] * 400)
    nxt = np.array([1, 2, 0] * 400)
    dones = np.array([False, False, True] * 400)
    signals = np.array([0.0, 0.0, 1.0] * 400)
    v = td0_evaluate(keys, signals, nxt, dones, 3, gamma=0.5)
    assert v == pytest.approx([0.25, 0.5, 1.0], abs=0.01)
    with pytest.raises(ValueError, match="keys"):
        td0_evaluate(keys, signals, nxt, dones, 2)


def _batch(b=2, t=5, priv_dim=21, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"obs": torch.randn(b, t, 14, generator=g), "priv": torch.randn(b, t, priv_dim, generator=g),
            "action": torch.rand(b, t, 2, generator=g) * 2 - 1, "reward": torch.randn(b, t, generator=g),
            "cost": (torch.rand(b, t, generator=g) > 0.7).float(), "is_first": torch.zeros(b, t),
            "is_terminal": torch.zeros(b, t)}


@pytest.mark.parametrize("variant", ["pig", "norep", "unprivileged", "informed"])
def test_world_model_variants_train_and_report_their_terms(variant):
    wm = AsymWorldModel(14, 2, 21, variant, **TINY, seed=0)
    total, metrics, (naive, priv) = wm.loss(_batch(), torch.Generator().manual_seed(0))
    total.backward()
    assert torch.isfinite(total) and naive.shape == (2, 5, 8 + 6)
    assert ("align" in metrics) == (variant == "pig")
    assert ("aux_priv" in metrics) == (variant == "informed")
    assert (priv is not None) == (variant in ("pig", "norep"))


def _align_grads(alpha, beta, batch):
    """Gradients of the last posterior and oracle layers, full loss with (alpha, beta) minus with no alignment."""
    out = []
    for a, b in ((alpha, beta), (0.0, 0.0)):
        wm = AsymWorldModel(14, 2, 21, "pig", **TINY, align_alpha=a, align_beta=b, align_free_nats=0.0, seed=0)
        wm.loss(batch, torch.Generator().manual_seed(0))[0].backward()
        out.append((wm.rssm.post_net[-1].weight.grad.clone(), wm.oracle[-1].weight.grad.clone()))
    return [(x - y).abs().max().item() for x, y in zip(*out, strict=True)]


def test_alignment_beta_moves_the_naive_posterior_alpha_the_oracle():
    batch = _batch()
    post, oracle = _align_grads(0.0, 1.0, batch)
    assert post > 1e-6 and oracle < 1e-9
    post, oracle = _align_grads(1.0, 0.0, batch)
    assert oracle > 1e-6  # (the naive posterior still moves a little through h, an input of the oracle)


def test_missing_privileged_state_is_a_clear_key_error():
    batch = _batch()
    del batch["priv"]
    with pytest.raises(KeyError, match="priv"):
        AsymWorldModel(14, 2, 21, "pig", **TINY).loss(batch)
    AsymWorldModel(14, 2, 0, "unprivileged", **TINY).loss(batch)


def test_negative_or_nan_costs_are_rejected():
    batch = _batch()
    batch["cost"][0, 0] = -1.0
    with pytest.raises(ValueError, match="cost"):
        AsymWorldModel(14, 2, 21, "pig", **TINY).loss(batch)
    batch["cost"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="cost"):
        AsymWorldModel(14, 2, 21, "pig", **TINY).loss(batch)


def test_lagrangian_multiplier_rises_over_budget_falls_under_and_stays_nonnegative():
    lag = AugmentedLagrangian(cost_limit=5.0, mu=0.1, nu=0.5, mu_max=0.2)
    assert lag.update(15.0) == pytest.approx(1.0)
    assert lag.mu == pytest.approx(0.15)
    lag.update(15.0)
    assert lag.multiplier == pytest.approx(2.5) and lag.mu == pytest.approx(0.2)  # mu capped
    for _ in range(20):
        lag.update(0.0)
    assert lag.multiplier == 0.0
    assert lag.penalty(0.0) == pytest.approx(0.0)  # lambda = 0, below budget: -lambda^2 / (2 mu) = 0
    lag.multiplier = 1.0
    assert lag.penalty(7.0) == pytest.approx(1.0 * 2 + 0.5 * 0.2 * 4)
    assert lag.weight(7.0) == pytest.approx(1.4)
    assert lag.penalty(0.0) == pytest.approx(-1.0 / 0.4)  # inactive branch: -lambda^2 / (2 mu)
    with pytest.raises(ValueError, match="cost_limit"):
        AugmentedLagrangian(cost_limit=-1.0)


def test_deployable_policy_holds_no_privileged_module_and_refuses_privileged_input():
    agent = PIGDreamer(14, 2, 21, variant="pig", **TINY, seed=0)
    policy = agent.policy()
    assert isinstance(policy, DeployablePolicy)
    deployed = {id(p) for p in policy.parameters()}
    wm = agent.world_model
    for module in (wm.priv_encoder, wm.priv_rssm, wm.priv_decoder, wm.oracle, wm.oracle_decoder, wm.reward_head,
                   wm.cost_head, agent.reward_critic, agent.cost_critic):
        assert not deployed & {id(p) for p in module.parameters()}
    obs, info = PrivilegedHazardNav(seed=0).reset()
    action, state = policy.act(obs)
    assert action.shape == (2,) and np.all(np.abs(action) <= 1)
    policy.act(obs, state)
    with pytest.raises(ValueError, match="privileged"):
        policy.act(obs, state, privileged=info["privileged"])


class _NoPrivileged(gym.Wrapper):
    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        return obs, {}

    def step(self, action):
        obs, r, te, tr, info = self.env.step(action)
        return obs, r, te, tr, {"cost": info["cost"]}


def test_privileged_variant_needs_info_privileged_but_unprivileged_does_not():
    env = _NoPrivileged(PrivilegedHazardNav(seed=0, episode_len=20))
    with pytest.raises(KeyError, match="privileged"):
        PIGDreamer(14, 2, 21, variant="pig", **TINY, seed=0).train(env, 5)
    log = PIGDreamer(14, 2, variant="unprivileged", **TINY, prefill=10, seed=0).train(env, 25)
    assert len(log["EpRet"]) == 1


def test_agent_trains_reports_epret_epcost_and_is_deterministic():
    logs = []
    for _ in range(2):
        env = PrivilegedHazardNav(seed=0, episode_len=20)
        agent = PIGDreamer(14, 2, 21, variant="pig", **TINY, batch_size=2, seq_len=4, prefill=10, horizon=3, seed=1)
        logs.append(agent.train(env, 45))
    assert len(logs[0]["EpRet"]) == 2 and len(logs[0]["EpCost"]) == 2 and len(logs[0]["update_seconds"]) > 0
    assert logs[0]["EpRet"] == logs[1]["EpRet"] and logs[0]["model_loss"] == logs[1]["model_loss"]
    assert all(m >= 0 for m in logs[0]["multiplier"])


def test_safety_gym_adapter_turns_six_tuples_into_info_cost():
    class SixTuple(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, cost=0.5):
            self.cost = cost

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(1, np.float32), {}

        def step(self, action):
            return np.zeros(1, np.float32), 1.0, self.cost, False, False, {}

    env = SafetyGymAdapter(SixTuple())
    env.reset()
    obs, reward, terminated, truncated, info = env.step(0)
    assert reward == 1.0 and info["cost"] == 0.5
    bad = SafetyGymAdapter(SixTuple(cost=-1.0))
    bad.reset()
    with pytest.raises(ValueError, match="cost"):
        bad.step(0)
    with pytest.raises(TypeError, match="env"):
        SafetyGymAdapter("not an env")


@pytest.mark.parametrize("call", [
    lambda: PrivilegedHazardNav(sensor_range=0.0),
    lambda: PrivilegedHazardNav(n_hazards=0),
    lambda: PrivilegedHazardNav(seed=0).reset() and PrivilegedHazardNav(seed=0).step([0.0, 0.0, 0.0]),
    lambda: HiddenHazardCorridor(sensor_prob=1.5),
    lambda: AsymWorldModel(14, 2, 0, "pig"),
    lambda: AsymWorldModel(14, 2, 21, "no-such-variant"),
    lambda: PIGDreamer(14, 2, 21, cost_limit=-1.0),
])
def test_bad_arguments_are_value_errors(call):
    with pytest.raises((ValueError, RuntimeError)):
        call()
