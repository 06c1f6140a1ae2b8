"""STAR: the rotation trick's exactness, parity with vector-quantize-pytorch's ResidualVQ, the causal skill
transformer, the environments (check_env), demonstrations, determinism and bad input."""

import warnings

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import icml25.rl  # noqa: F401 - registers the environments
from icml25.rl import (
    CausalSkillTransformer,
    ChunkMLPPolicy,
    PlanarSkillsEnv,
    PlanarSkillsExpert,
    RaRSQ,
    ResidualSkillQuantizer,
    code_usage,
    collect_planar_demos,
    make_chunks,
    rollout_success,
    rotate_to,
    rotation_apply,
    train_policy,
    train_rarsq,
)


def _pair(n=16, m=6, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, m, generator=g, dtype=dtype), torch.randn(n, m, generator=g, dtype=dtype)


def _explicit_rotation(r, e):
    u, v = r / r.norm(), e / e.norm()
    w = (u + v) / (u + v).norm()
    eye = torch.eye(len(r), dtype=r.dtype)
    return eye - 2 * torch.outer(w, w) + 2 * torch.outer(v, u), u, v


# ---------------------------------------------------------------- the rotation trick


def test_rotate_to_forward_is_exactly_the_code():
    r, e = _pair()
    q = rotate_to(r.requires_grad_(True), e)
    assert torch.equal(q, e)


def test_rotate_to_jacobian_is_the_scaled_rotation():
    r, e = _pair(n=5)
    for i in range(5):
        jac = torch.autograd.functional.jacobian(lambda x, i=i: rotate_to(x.unsqueeze(0), e[i:i + 1])[0], r[i])
        R, u, v = _explicit_rotation(r[i], e[i])
        s = e[i].norm() / r[i].norm()
        torch.testing.assert_close(jac, s * R, atol=1e-12, rtol=0)
        torch.testing.assert_close(R.T @ R, torch.eye(6, dtype=torch.float64), atol=1e-12, rtol=0)
        torch.testing.assert_close(R @ u, v, atol=1e-12, rtol=0)


def test_rotation_apply_equals_the_matrix():
    r, e = _pair(n=4)
    x = _pair(n=4, seed=3)[0]
    u, v = r / r.norm(dim=1, keepdim=True), e / e.norm(dim=1, keepdim=True)
    out = rotation_apply(u, v, x)
    for i in range(4):
        torch.testing.assert_close(out[i], _explicit_rotation(r[i], e[i])[0] @ x[i], atol=1e-12, rtol=0)


def test_gradient_differs_within_a_code_cell_unlike_ste():
    """Two residuals with the same code: the STE hands both the same gradient, the rotation trick does not."""
    e = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    r = torch.tensor([[1.0, 0.3], [1.0, -0.3]], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([[0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    (rotate_to(r, e) * g).sum().backward()
    assert not torch.allclose(r.grad[0], r.grad[1])


def test_degenerate_rows_fall_back_to_ste_without_nan():
    r, e = _pair(n=4)
    r[0] = 0.0
    e[1] = 0.0
    r[2] = -2.0 * e[2]
    r.requires_grad_(True)
    q = rotate_to(r, e)
    assert torch.equal(q, e)
    q.sum().backward()
    assert torch.isfinite(r.grad).all()
    torch.testing.assert_close(r.grad[:3], torch.ones(3, 6, dtype=torch.float64))  # identity Jacobian
    vq = ResidualSkillQuantizer(6, 4, 1, seed=0).double()
    vq.codebooks.data[0] = e[2].expand(4, 6)  # every code antipodal to the input
    vq(-2.0 * e[2:3])
    assert vq.n_fallback == 1


# ---------------------------------------------------------------- the residual quantizer


@pytest.mark.parametrize("rotation", [True, False])
def test_quantizer_forward_sums_the_codes_and_reports_indices(rotation):
    vq = ResidualSkillQuantizer(8, 16, 3, rotation=rotation, seed=0).double()
    z = _pair(n=32, m=8)[0].requires_grad_(True)
    z_hat, idx, loss = vq(z)
    assert idx.shape == (32, 3) and idx.dtype == torch.int64
    torch.testing.assert_close(z_hat, vq.codes_from_indices(idx).detach(), atol=1e-12, rtol=0)
    residual = z.detach()
    for d in range(3):  # greedy nearest code on each residual
        k = torch.cdist(residual, vq.codebooks[d].detach()).argmin(-1)
        assert torch.equal(k, idx[:, d])
        residual = residual - vq.codebooks[d].detach()[k]
    loss.backward()
    assert vq.codebooks.grad is not None and z.grad is not None


def test_ste_jacobian_is_identity():
    vq = ResidualSkillQuantizer(4, 8, 1, rotation=False, seed=0).double()
    z = _pair(n=1, m=4)[0][0]
    jac = torch.autograd.functional.jacobian(lambda x: vq(x.unsqueeze(0))[0][0], z)
    torch.testing.assert_close(jac, torch.eye(4, dtype=torch.float64))


@pytest.mark.parametrize("rotation", [True, False])
def test_matches_vector_quantize_pytorch_residual_vq(rotation):
    vqp = pytest.importorskip("vector_quantize_pytorch")
    ours = ResidualSkillQuantizer(8, 16, 2, rotation=rotation, seed=0)
    theirs = vqp.ResidualVQ(dim=8, num_quantizers=2, codebook_size=16, rotation_trick=rotation,
                            quant_grad_frac=1.0, ema_update=False, learnable_codebook=True)
    with torch.no_grad():
        for d in range(2):
            theirs.layers[d]._codebook.embed.copy_(ours.codebooks[d].unsqueeze(0))
    z = torch.randn(64, 8, generator=torch.Generator().manual_seed(1)) * 0.5
    z1, z2 = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    z_hat, idx, _ = ours(z1)
    out, idx2, _ = theirs(z2.unsqueeze(1))
    assert torch.equal(idx, idx2.squeeze(1))
    torch.testing.assert_close(z_hat, out.squeeze(1), atol=1e-5, rtol=0)
    g = torch.randn(64, 8, generator=torch.Generator().manual_seed(2))
    (z_hat * g).sum().backward()
    (out.squeeze(1) * g).sum().backward()
    torch.testing.assert_close(z1.grad, z2.grad, atol=1e-5, rtol=1e-5)


def test_code_usage_uniform_and_collapsed():
    uniform = torch.arange(16).repeat(4).view(-1, 1)
    assert code_usage(uniform, 16) == [{"utilization": 1.0, "perplexity": pytest.approx(16.0)}]
    collapsed = torch.zeros(10, 2, dtype=torch.int64)
    assert code_usage(collapsed, 16)[1] == {"utilization": 1 / 16, "perplexity": 1.0}


def test_ema_kmeans_and_dead_code_options_train_without_touching_the_global_rng():
    state = torch.random.get_rng_state()
    vq = ResidualSkillQuantizer(4, 8, 2, ema=True, kmeans_init=True, dead_code_threshold=1, seed=0)
    z = torch.randn(128, 4, generator=torch.Generator().manual_seed(0))
    before = vq.codebooks.detach().clone()
    vq(z)
    assert not torch.equal(before, vq.codebooks.detach())
    assert not vq.codebooks.requires_grad
    assert torch.equal(state, torch.random.get_rng_state())


# ---------------------------------------------------------------- stage 0 and stage 1


def test_rarsq_trains_and_decodes_float64():
    chunks = torch.rand(64, 4, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1
    model = RaRSQ(2, chunk=4, latent=8, hidden=16, seed=0, codebook_size=8)
    hist = train_rarsq(model, chunks, steps=60, batch_size=32, seed=0)
    assert hist[-1]["mse"] < hist[0]["mse"]
    model = model.to(torch.float64)
    out = model.decode(model.encode(chunks.double()))
    assert out.dtype == torch.float64 and out.shape == chunks.shape


def test_rarsq_is_deterministic_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = RaRSQ(2, 4, 8, 16, seed=3), RaRSQ(2, 4, 8, 16, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert torch.equal(state, torch.random.get_rng_state())


def _code_task(ar, steps=150, seed=0):
    """One observation, two valid code pairs (0, 1) and (2, 3)."""
    stage0 = RaRSQ(1, 1, 4, 4, seed=0, codebook_size=4)
    policy = CausalSkillTransformer(3, 1, stage0, autoregressive=ar, offset=False, d_model=16, n_layers=1, seed=seed)
    opt = torch.optim.Adam([p for p in policy.parameters() if p.requires_grad], lr=1e-2)
    obs = torch.ones(64, 1, 3)
    codes = torch.tensor([[0, 1], [2, 3]]).repeat(32, 1)
    for _ in range(steps):
        loss, _ = policy.loss(obs, torch.zeros(64, dtype=torch.int64), codes=codes)
        opt.zero_grad()
        loss.backward()
        opt.step()
    policy.eval()
    return policy.sample_codes(torch.ones(2000, 1, 3), torch.zeros(2000, dtype=torch.int64), top_p=1.0, seed=0)


def test_depth_autoregressive_codes_are_coherent_and_independent_heads_are_not():
    def invalid(s):
        return 1 - np.mean([tuple(c) in ((0, 1), (2, 3)) for c in s.tolist()])

    assert invalid(_code_task(True)) < 0.05
    assert invalid(_code_task(False)) > 0.35


def test_cst_offset_training_act_and_determinism():
    eps = collect_planar_demos(3, noise=0.1, seed=0)
    data = make_chunks(eps, chunk=4, history=2)
    stage0 = RaRSQ(3, 4, 8, 32, seed=0)
    train_rarsq(stage0, data.chunks, data.mask, steps=20, seed=0)
    frozen = [p.clone() for p in stage0.parameters()]
    policy = CausalSkillTransformer(11, 3, stage0, d_model=16, n_layers=1, history=2, seed=0)
    train_policy(policy, data, steps=20, batch_size=32, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(frozen, stage0.parameters(), strict=True))
    a = policy.act(data.obs[:5], data.tasks[:5], seed=1)
    assert a.shape == (5, 4, 3)
    assert torch.equal(a, policy.act(data.obs[:5], data.tasks[:5], seed=1))
    greedy = policy.act(data.obs[:5], data.tasks[:5], greedy=True)
    assert torch.equal(greedy, policy.act(data.obs[:5], data.tasks[:5], greedy=True))


def test_make_chunks_pads_with_the_last_action_and_masks():
    ep = {"obs": np.arange(6, dtype=np.float32).reshape(3, 2), "actions": np.arange(3, dtype=np.float32)[:, None],
          "task": 1}
    data = make_chunks([ep], chunk=4, history=2)
    assert data.chunks[2, :, 0].tolist() == [2, 2, 2, 2]
    assert data.mask[1].tolist() == [True, True, False, False]
    assert data.obs[0].tolist() == [[0, 1], [0, 1]]
    assert data.tasks.tolist() == [1, 1, 1]


# ---------------------------------------------------------------- environments and demonstrations


def test_planar_skills_passes_check_env_and_is_registered():
    env = gymnasium.make("icml25/PlanarSkills-v0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped, skip_render_check=True)
    for task in ("detour", "reach", "pick_place"):
        check_env(PlanarSkillsEnv(task), skip_render_check=True)


@pytest.mark.parametrize("task", ["detour", "reach", "pick_place"])
def test_planar_expert_solves_every_task(task):
    env, expert = PlanarSkillsEnv(task), PlanarSkillsExpert(seed=0)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        expert.reset()
        for _ in range(100):
            obs, _, terminated, truncated, info = env.step(expert(obs))
            if terminated or truncated:
                break
        assert info["success"]


def test_detour_has_two_expert_modes():
    eps = collect_planar_demos(20, tasks=("detour",), noise=0.0, seed=0)
    sides = {np.sign(e["actions"][0, 0]) for e in eps}
    assert sides == {-1.0, 1.0}


def test_metaworld_env_check_env_and_scripted_demo():
    pytest.importorskip("metaworld")
    from icml25.rl import collect_metaworld_demos

    env = gymnasium.make("icml25/MetaWorldMT10-v0", task="reach-v3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped, skip_render_check=True)
        eps = collect_metaworld_demos(["reach-v3"], n_demos=1, seed=0)
        again = collect_metaworld_demos(["reach-v3"], n_demos=1, seed=0)
    assert eps[0]["obs"].shape[1] == 39 and eps[0]["actions"].shape[1] == 4
    np.testing.assert_array_equal(eps[0]["actions"], again[0]["actions"])


def test_rollout_success_on_planar():
    policy = ChunkMLPPolicy(11, 3, 3, 4, hidden=8, seed=0)
    out = rollout_success(policy, lambda t: PlanarSkillsEnv(("detour", "reach", "pick_place")[t]), 3, 2,
                          max_steps=12, seed=0)
    assert set(out) == {0, 1, 2} and all(0.0 <= v <= 1.0 for v in out.values())
    assert out == rollout_success(policy, lambda t: PlanarSkillsEnv(("detour", "reach", "pick_place")[t]), 3, 2,
                                  max_steps=12, seed=0)


# ---------------------------------------------------------------- bad input


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="codebook_size"):
        ResidualSkillQuantizer(4, codebook_size=1)
    with pytest.raises(ValueError, match="depth"):
        ResidualSkillQuantizer(4, depth=0)
    vq = ResidualSkillQuantizer(4, 8, 2, seed=0)
    with pytest.raises(IndexError, match="depth 1"):
        vq.codes_from_indices(torch.tensor([[0, 8]]))
    with pytest.raises(ValueError, match="z"):
        vq(torch.zeros(3, 5))
    model = RaRSQ(2, 4, 8, 16, seed=0)
    with pytest.raises(ValueError, match="chunks"):
        model.encode(torch.zeros(3, 5, 2))
    policy = CausalSkillTransformer(3, 2, model, d_model=8, n_layers=1, n_heads=2, seed=0)
    obs, tasks = torch.zeros(2, 1, 3), torch.zeros(2, dtype=torch.int64)
    with pytest.raises(ValueError, match="top_p"):
        policy.act(obs, tasks, top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        policy.act(obs, tasks, temperature=0.0)
    with pytest.raises(ValueError, match="tasks"):
        policy.act(obs, torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="code_weights"):
        CausalSkillTransformer(3, 2, model, code_weights=(1.0,), d_model=8, n_heads=2)
    with pytest.raises(ValueError, match="task"):
        PlanarSkillsEnv("fly")
    with pytest.raises(ValueError, match="action"):
        env = PlanarSkillsEnv("reach")
        env.reset(seed=0)
        env.step([np.nan, 0, 0])
