"""The DreamerV3 core: symlog / two-hot exactness, KL balance and free bits, lambda-returns, the RSSM's shapes and
resets, the return normaliser, the replay, seeded determinism and bad input."""

import numpy as np
import pytest
import torch

from icml25.rl import (
    RSSM,
    Actor,
    Critic,
    ReturnNormalizer,
    SequenceReplay,
    kl_balance,
    lambda_returns,
    mix_uniform,
    sample_onehot,
    symexp,
    symlog,
    symlog_bins,
    twohot,
    twohot_loss,
    twohot_mean,
)


def test_symlog_symexp_are_inverse_and_match_the_formula():
    x = torch.tensor([-1e4, -3.0, -0.5, 0.0, 0.5, 3.0, 1e4], dtype=torch.float64)
    assert torch.allclose(symlog(x), torch.sign(x) * torch.log(1 + x.abs()))
    assert torch.allclose(symexp(symlog(x)), x, rtol=1e-12)
    assert symlog(torch.tensor([0.0])).item() == 0.0


def test_twohot_is_exact_inside_the_bins_and_clips_outside():
    bins = symlog_bins(11, -5.0, 5.0).double()
    y = torch.tensor([-5.0, -2.3, 0.0, 0.7, 4.99, 5.0], dtype=torch.float64)
    enc = twohot(y, bins)
    assert torch.allclose(enc.sum(-1), torch.ones(6, dtype=torch.float64))
    assert torch.allclose((enc * bins).sum(-1), y)
    assert ((enc > 0).sum(-1) <= 2).all()
    assert torch.allclose((twohot(torch.tensor([9.0, -9.0]).double(), bins) * bins).sum(-1),
                          torch.tensor([5.0, -5.0]).double())


def test_twohot_mean_of_a_perfect_logit_recovers_the_value_and_the_loss_is_minimal_there():
    bins = symlog_bins(255).double()
    target = torch.tensor([3.7, -120.0], dtype=torch.float64)
    logits = torch.log(twohot(symlog(target), bins) + 1e-30)
    assert torch.allclose(twohot_mean(logits, bins), target, rtol=1e-6)
    perfect = twohot_loss(logits, target, bins)
    other = twohot_loss(torch.zeros_like(logits), target, bins)
    assert (perfect < other).all()


def test_kl_balance_free_bits_cut_gradients_below_the_threshold():
    post = torch.zeros(3, 4, 5, requires_grad=True)
    prior = (torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(0)) * 0.01).requires_grad_()
    loss, kl = kl_balance(post, prior, free_nats=1.0)
    assert torch.allclose(loss, torch.full((3,), 0.6))  # (0.5 + 0.1) * max(1, tiny KL)
    loss.sum().backward()
    assert post.grad.abs().max() == 0 and prior.grad.abs().max() == 0
    assert (kl >= 0).all()


def test_kl_balance_weights_the_two_directions():
    g = torch.Generator().manual_seed(1)
    post = torch.randn(2, 3, 4, generator=g, requires_grad=True)
    prior = torch.randn(2, 3, 4, generator=g, requires_grad=True)
    kl_balance(post, prior, dyn_scale=1.0, rep_scale=0.0, free_nats=0.0)[0].sum().backward()
    assert post.grad.abs().max() == 0 and prior.grad.abs().max() > 0


def test_lambda_returns_reduce_to_td0_and_monte_carlo():
    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(5, 3, generator=g), torch.randn(6, 3, generator=g)
    c = torch.ones(5, 3)
    assert torch.allclose(lambda_returns(r, v, c, gamma=0.9, lam=0.0), r + 0.9 * v[1:])
    mc = torch.stack([sum(0.9 ** j * r[k + j] for j in range(5 - k)) + 0.9 ** (5 - k) * v[5] for k in range(5)])
    assert torch.allclose(lambda_returns(r, v, c, gamma=0.9, lam=1.0), mc, atol=1e-6)
    assert torch.allclose(lambda_returns(r, v, torch.zeros(5, 3), lam=0.5), r)


def test_rssm_shapes_and_reset_on_is_first():
    rssm = RSSM(embed_dim=6, act_dim=2, deter=8, stoch=3, classes=4, hidden=16, seed=0)
    g = torch.Generator().manual_seed(0)
    embed, action = torch.randn(2, 5, 6, generator=g), torch.randn(2, 5, 2, generator=g)
    first = torch.zeros(2, 5)
    states, post, prior = rssm(embed, action, first, torch.Generator().manual_seed(1))
    assert states.shape == (2, 5, 8 + 12) and post.shape == prior.shape == (2, 5, 3, 4)
    z = states[..., 8:].reshape(2, 5, 3, 4)
    assert torch.allclose(z.sum(-1), torch.ones(2, 5, 3))
    # a reset at step 3 makes steps 3.. independent of what came before
    first[:, 3] = 1
    a = rssm(embed, action, first, torch.Generator().manual_seed(2))[0]
    embed2 = embed.clone()
    embed2[:, :3] += 5.0
    b = rssm(embed2, action, first, torch.Generator().manual_seed(2))[0]
    assert torch.allclose(a[:, 3:, :8], b[:, 3:, :8], atol=1e-6)
    nxt, logits = rssm.img_step(states[:, -1], action[:, -1], torch.Generator().manual_seed(0))
    assert nxt.shape == (2, 20) and logits.shape == (2, 3, 4)


def test_rssm_is_deterministic_with_a_seed_and_leaves_the_global_rng_alone():
    before = torch.random.get_rng_state()
    m1, m2 = RSSM(4, 1, 8, 2, 3, 8, seed=5), RSSM(4, 1, 8, 2, 3, 8, seed=5)
    assert torch.equal(before, torch.random.get_rng_state())
    x, a, f = torch.ones(1, 3, 4), torch.zeros(1, 3, 1), torch.zeros(1, 3)
    out1, out2 = m1(x, a, f, torch.Generator().manual_seed(0)), m2(x, a, f, torch.Generator().manual_seed(0))
    assert torch.equal(out1[0], out2[0])


def test_sample_onehot_is_straight_through_and_unimix_floors_probabilities():
    logits = torch.tensor([[10.0, -10.0, -10.0]], requires_grad=True)
    sample = sample_onehot(logits, torch.Generator().manual_seed(0))
    assert torch.equal(sample.detach(), torch.tensor([[1.0, 0.0, 0.0]]))
    (sample * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad.abs().sum() > 0
    probs = mix_uniform(torch.tensor([100.0, 0.0, 0.0, 0.0]), 0.01).exp()
    assert probs.min() >= 0.01 / 4 - 1e-9 and torch.isclose(probs.sum(), torch.tensor(1.0))


def test_return_normalizer_tracks_the_percentile_range_and_never_scales_up():
    norm = ReturnNormalizer(decay=0.0)
    assert norm.scale == 1.0
    assert norm.update(torch.linspace(0, 100, 1001)) == pytest.approx(90.0)
    assert norm.update(torch.zeros(10) + 0.01) == 1.0


def test_actor_and_critic():
    actor, critic = Actor(5, 2, 16, seed=0), Critic(5, 16, slow_decay=0.5, seed=0)
    feat = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    action, logp, ent = actor.sample(feat, torch.Generator().manual_seed(0))
    assert action.shape == (4, 2) and logp.shape == ent.shape == (4,)
    assert torch.allclose(critic(feat), torch.zeros(4), atol=1e-5)  # zero-initialised output layer
    opt = torch.optim.Adam(critic.net.parameters(), lr=1e-2)
    for _ in range(100):
        opt.zero_grad()
        critic.loss(feat, torch.full((4,), 3.0)).mean().backward()
        opt.step()
        critic.update_slow()
    assert (critic(feat) > 1.5).all() and (critic(feat, slow=True) > 1.5).all()
    before = [p.clone() for p in critic.slow.parameters()]
    critic.update_slow()
    assert any(not torch.equal(a, b) for a, b in zip(before, critic.slow.parameters(), strict=True))


def test_sequence_replay_windows_and_is_first():
    replay = SequenceReplay(capacity=10, seed=0)
    for t in range(15):
        replay.add({"x": [t], "is_first": float(t % 7 == 0)})
    assert len(replay) == 10
    batch = replay.sample(8, 4)
    x = batch["x"][..., 0]
    assert x.shape == (8, 4) and (x >= 5).all()
    assert torch.equal(x[:, 1:] - x[:, :-1], torch.ones(8, 3))
    assert (batch["is_first"][:, 0] == 1).all()
    same = SequenceReplay(capacity=10, seed=0)
    for t in range(15):
        same.add({"x": [t], "is_first": float(t % 7 == 0)})
    assert torch.equal(same.sample(8, 4)["x"], batch["x"])


@pytest.mark.parametrize("call, error", [
    (lambda: symlog(np.ones(3)), TypeError),
    (lambda: twohot(torch.tensor([float("nan")]), symlog_bins()), ValueError),
    (lambda: twohot(torch.ones(2), torch.tensor([1.0, 0.0])), ValueError),
    (lambda: kl_balance(torch.zeros(2, 3), torch.zeros(2, 4)), ValueError),
    (lambda: lambda_returns(torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3, 2)), ValueError),
    (lambda: RSSM(4, 2, stoch=0), ValueError),
    (lambda: RSSM(4, 2)(torch.zeros(1, 3, 5), torch.zeros(1, 3, 2), torch.zeros(1, 3)), ValueError),
    (lambda: SequenceReplay(5).sample(1, 2), ValueError),
    (lambda: ReturnNormalizer(low=0.9, high=0.1), ValueError),
])
def test_bad_input_is_rejected(call, error):
    with pytest.raises(error):
        call()


def test_replay_rejects_shape_changes_and_non_finite_steps():
    replay = SequenceReplay(5)
    replay.add({"x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="shape"):
        replay.add({"x": [1.0]})
    with pytest.raises(ValueError, match="finite"):
        replay.add({"x": [1.0, float("nan")]})
    with pytest.raises(ValueError, match="keys"):
        replay.add({"y": [1.0, 2.0]})
