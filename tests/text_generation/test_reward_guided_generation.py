"""FaRMA, its losses and decoders, the baselines, the transformers logits processor and the token world."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from icml25.data.token_world import TokenWorld
from icml25.text_generation import (
    FaRMARewardModel,
    RewardGuidedLogitsProcessor,
    ScalarRewardModel,
    TinyCausalLM,
    args_generate,
    best_of_n,
    bt_loss,
    max_consistency_loss,
    reward_guided_generate,
    sequence_logprob,
    train_dpo,
    train_farma,
    train_lm,
    train_scalar_rm,
)

V = 10


def _lm(seed=0, **kw):
    return TinyCausalLM(V, dim=16, n_layers=1, n_heads=2, max_len=12, seed=seed, **kw)


def _ids(n=4, length=5, seed=0):
    return torch.randint(0, V - 2, (n, length), generator=torch.Generator().manual_seed(seed))


class TableRM(nn.Module):
    """A FaRMA backbone from an exact value table: logits[b, j] = q(ids[b, :j+1] ⊕ v) for the token world."""

    def __init__(self, world, tables):
        super().__init__()
        self.world, self.tables = world, tables

    def forward(self, ids):
        out = torch.full((*ids.shape, self.world.n_tokens), -1e3, dtype=torch.float64)
        for b in range(ids.shape[0]):
            for j in range(ids.shape[1]):
                prefix = tuple(ids[b, 1:j + 1].tolist())
                if len(prefix) < self.world.length:
                    out[b, j, :self.world.vocab] = torch.as_tensor(self.tables[len(prefix)][prefix])
        return out


class FlatLM(nn.Module):
    """A uniform LM (zero logits) over the token world's vocabulary."""

    def __init__(self, n_tokens):
        super().__init__()
        self.n_tokens = n_tokens

    def forward(self, ids):
        return torch.zeros(*ids.shape, self.n_tokens, dtype=torch.float64)


# ------------------------------------------------------------------ models


def test_tiny_lm_is_causal_seeded_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = _lm(seed=3), _lm(seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    ids = _ids()
    assert torch.equal(a(ids), b(ids)) and a(ids).shape == (4, 5, V)
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % V
    assert torch.allclose(a(ids)[:, :-1], a(changed)[:, :-1], atol=1e-6)  # the future does not leak back
    assert a.to(torch.float64)(ids).dtype == torch.float64


def test_one_farma_call_scores_every_expansion_like_k_scalar_calls():
    rm = FaRMARewardModel(_lm())
    prefix = _ids(3, 4)
    all_scores = rm.scores(prefix)
    for v in range(V):
        expanded = torch.cat([prefix, torch.full((3, 1), v)], 1)
        assert torch.allclose(rm.sequence_score(expanded), all_scores[:, v], atol=1e-6)


def test_sequence_score_stops_at_the_first_eos():
    rm = FaRMARewardModel(_lm())
    ids = torch.tensor([[9, 1, 2, 8, 8, 8]])
    assert torch.allclose(rm.sequence_score(ids, eos_id=8), rm.sequence_score(ids[:, :4]))
    assert not torch.allclose(rm.sequence_score(ids, eos_id=8), rm.sequence_score(ids))


# ------------------------------------------------------------------ losses


def test_bt_loss_values_margin_and_centring():
    w, l = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0])
    expected = -(torch.log(torch.sigmoid(torch.tensor(1.0))) + torch.log(torch.tensor(0.5))) / 2
    assert torch.isclose(bt_loss(w, l), expected)
    with_margin = -(torch.log(torch.tensor(0.5)) + torch.log(torch.sigmoid(torch.tensor(-1.0)))) / 2
    assert torch.isclose(bt_loss(w, l, margin=1.0), with_margin)
    assert torch.isclose(bt_loss(w, l, center_coef=0.5) - bt_loss(w, l), torch.tensor(0.25))


def test_max_consistency_is_zero_on_an_exact_max_consistent_table_and_not_on_the_full_sequence_reward():
    world = TokenWorld(vocab=3, length=3, seed=0)
    seqs = torch.as_tensor(world.with_bos(world.all_sequences()))
    exact = FaRMARewardModel(TableRM(world, world.q_max()))
    assert float(max_consistency_loss(exact, seqs)) < 1e-20
    prefix_reward = FaRMARewardModel(TableRM(world, world.q_full_prefix()))
    assert float(max_consistency_loss(prefix_reward, seqs)) > 1e-3


def test_max_consistency_min_prefix_eos_mask_and_gradients():
    rm = FaRMARewardModel(_lm())
    ids = torch.cat([torch.full((4, 1), 9), _ids(4, 6)], 1)
    full = max_consistency_loss(rm, ids)
    assert float(full.detach()) > 0
    assert not torch.isclose(full, max_consistency_loss(rm, ids, min_prefix=3))
    ids_eos = ids.clone()
    ids_eos[:, 2:] = 8
    r = rm(ids_eos[:, :-1])
    only_first = ((r[:, 0].gather(1, ids_eos[:, 1:2]).squeeze(1) - r[:, 1].max(-1).values) ** 2).mean()
    assert torch.isclose(max_consistency_loss(rm, ids_eos, eos_id=8), only_first, atol=1e-6)
    for detach in (False, True):
        rm.zero_grad()
        max_consistency_loss(rm, ids, detach_target=detach).backward()
        assert all(p.grad is not None for p in rm.parameters() if p.requires_grad)


# ------------------------------------------------------------------ decoding and call accounting


def test_farma_uses_one_rm_call_per_token_and_args_uses_k():
    lm, rm = _lm(), FaRMARewardModel(_lm(seed=1))
    prompt = torch.full((5, 1), 9)
    _, fs = reward_guided_generate(lm, rm, prompt, max_new_tokens=6, seed=0)
    assert (fs.lm_calls, fs.rm_calls, fs.tokens, fs.rm_calls_per_token) == (6, 6, 6, 1.0)
    srm = ScalarRewardModel(_lm(seed=2))
    _, a = args_generate(lm, srm, prompt, k=4, max_new_tokens=6, seed=0)
    assert (a.lm_calls, a.rm_calls, a.rm_sequences, a.rm_calls_per_token) == (6, 24, 120, 4.0)
    _, ab = args_generate(lm, srm, prompt, k=4, max_new_tokens=6, batched=True, seed=0)
    assert (ab.rm_calls, ab.rm_sequences) == (6, 120)
    _, bs = best_of_n(lm, srm, prompt, n=3, max_new_tokens=6, seed=0)
    assert (bs.lm_calls, bs.rm_calls, bs.rm_sequences) == (6, 1, 15)


def test_args_batched_and_unbatched_choose_the_same_tokens():
    lm, srm = _lm(), ScalarRewardModel(_lm(seed=2))
    prompt = torch.full((5, 1), 9)
    a, _ = args_generate(lm, srm, prompt, k=4, max_new_tokens=5, mode="greedy")
    b, _ = args_generate(lm, srm, prompt, k=4, max_new_tokens=5, mode="greedy", batched=True)
    assert torch.equal(a, b)


def test_beta_zero_is_base_top_k_sampling_and_seeds_repeat():
    lm, rm = _lm(), FaRMARewardModel(_lm(seed=1))
    prompt = torch.full((8, 2), 9)
    base, stats = reward_guided_generate(lm, None, prompt, top_k=3, max_new_tokens=5, seed=4)
    zero, zstats = reward_guided_generate(lm, rm, prompt, beta=0.0, top_k=3, max_new_tokens=5, seed=4)
    assert torch.equal(base, zero) and stats.rm_calls == zstats.rm_calls == 0
    again, _ = reward_guided_generate(lm, rm, prompt, top_k=3, max_new_tokens=5, seed=4)
    once, _ = reward_guided_generate(lm, rm, prompt, top_k=3, max_new_tokens=5, seed=4)
    assert torch.equal(again, once)
    top = _lm()(prompt)[:, -1].topk(3, -1).indices
    first = base[:, 2]
    assert all(int(t) in top[i].tolist() for i, t in enumerate(first))  # top-k sampling stays in the top k


def test_rows_finishing_at_different_steps_are_padded_with_eos_and_generation_stops():
    world = TokenWorld(vocab=3, length=3, seed=0)

    class EosAfter(nn.Module):  # emits token 0 then EOS at step 1 for row 0 and step 2 for row 1
        def forward(self, ids):
            out = torch.full((*ids.shape, world.n_tokens), -10.0)
            row_stop = torch.tensor([2, 3])[: len(ids)]
            out[:, -1, 0] = 0.0
            out[ids.shape[1] >= row_stop, -1, world.eos_id] = 10.0
            return out

    ids, stats = reward_guided_generate(EosAfter(), None, torch.full((2, 1), world.bos_id), mode="greedy",
                                        max_new_tokens=10, eos_id=world.eos_id)
    assert ids.tolist() == [[4, 0, 3, 3], [4, 0, 0, 3]]
    assert stats.tokens == 3


def test_greedy_guidance_with_the_exact_max_consistent_table_reaches_the_optimum():
    world = TokenWorld(seed=0)
    prompt = torch.full((1, 1), world.bos_id)
    best = {}
    for name, tables in (("max", world.q_max()), ("full", world.q_full_prefix())):
        ids, _ = reward_guided_generate(FlatLM(world.n_tokens), FaRMARewardModel(TableRM(world, tables)), prompt,
                                        beta=1.0, mode="greedy", max_new_tokens=world.length)
        best[name] = float(world.reward(ids[:, 1:].numpy())[0])
    assert best["max"] == pytest.approx(world.optimal_value())
    assert best["full"] < world.optimal_value() - 1.0


# ------------------------------------------------------------------ training


def test_training_lowers_the_losses_and_keeps_the_global_rng():
    world = TokenWorld(vocab=4, length=4, seed=1)
    chosen, rejected = (torch.as_tensor(world.with_bos(y)) for y in world.sample_pairs(256, seed=0))
    lm = TinyCausalLM(world.n_tokens, dim=16, n_layers=1, n_heads=2, max_len=6, seed=0)
    state = torch.random.get_rng_state()
    lm_loss = train_lm(lm, chosen, steps=30, batch_size=64, seed=0)
    rm = FaRMARewardModel(copy.deepcopy(lm))
    farma = train_farma(rm, chosen, rejected, rounds=3, batch_size=64, seed=0)
    joint = train_farma(FaRMARewardModel(copy.deepcopy(lm)), chosen, rejected, rounds=2, schedule="joint",
                        batch_size=64, seed=0)
    srm = ScalarRewardModel(copy.deepcopy(lm))
    scalar = train_scalar_rm(srm, chosen, rejected, epochs=3, batch_size=64, prefixes=True, seed=0)
    policy = copy.deepcopy(lm)
    dpo = train_dpo(policy, chosen, rejected, epochs=3, batch_size=64, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert lm_loss[-1] < lm_loss[0] and len(farma) == 6 and len(joint) == 2
    assert farma[-1] < farma[1] and scalar[-1] < scalar[0] and dpo[-1] < dpo[0]
    with torch.no_grad():
        gain = sequence_logprob(policy, chosen) - sequence_logprob(lm, chosen)
        assert float(gain.mean()) > float((sequence_logprob(policy, rejected) - sequence_logprob(lm, rejected)).mean())


# ------------------------------------------------------------------ transformers interop


def test_logits_processor_in_gpt2_generate_matches_our_greedy_decoder_with_one_rm_call_per_token():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(vocab_size=V, n_positions=16, n_embd=16, n_layer=1, n_head=2,
                                  bos_token_id=9, eos_token_id=8, pad_token_id=8)
    torch_state = torch.random.get_rng_state()
    lm = transformers.GPT2LMHeadModel(cfg).eval()
    rm = FaRMARewardModel(transformers.GPT2LMHeadModel(cfg).eval())
    torch.random.set_rng_state(torch_state)
    prompt = torch.tensor([[9, 1, 2], [9, 3, 4]])
    proc = RewardGuidedLogitsProcessor(rm, beta=2.0, top_k=4)
    out = lm.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=5, min_new_tokens=5,
                      do_sample=False, logits_processor=transformers.LogitsProcessorList([proc]))
    ours, stats = reward_guided_generate(lm, rm, prompt, beta=2.0, top_k=4, mode="greedy", max_new_tokens=5)
    assert torch.equal(out, ours)
    assert proc.calls == stats.rm_calls == 5
    scores = torch.randn(2, V, generator=torch.Generator().manual_seed(0))
    kept = torch.isfinite(RewardGuidedLogitsProcessor(rm, top_k=3)(prompt, scores)).sum(1)
    assert kept.tolist() == [3, 3]


# ------------------------------------------------------------------ token world


def test_token_world_tables_reward_and_the_trap():
    world = TokenWorld(seed=2)
    seqs = world.all_sequences()
    assert seqs.shape == (8 ** 6, 6)
    q = world.q_max()
    assert q[0].max() == pytest.approx(world.optimal_value()) and q[-1].shape == (8,) * 6
    np.testing.assert_allclose(q[2], q[3].max(-1))
    exp = world.q_expected()
    np.testing.assert_allclose(exp[0].max(), exp[0].max())
    np.testing.assert_allclose(exp[4][(1, 2, 3, 4, 5)], world.transition[5] @ exp[5][(1, 2, 3, 4, 5)])
    assert world.reward(np.array([[0, 2, 1, world.eos_id, 1, 1]]))[0] == pytest.approx(
        world.values[[0, 2, 1]].sum() + world.bonus)
    assert world.reward(np.array([[1, 0]]))[0] == pytest.approx(world.values[0])  # payoff before setup: no bonus
    opt = world.optimal_value()
    assert world.reward(world.greedy(q)[None])[0] == pytest.approx(opt)
    assert world.reward(world.greedy(world.q_full_prefix())[None])[0] < opt
    assert world.reward(world.greedy(exp)[None])[0] < opt
    chosen, rejected = world.sample_pairs(2000, seed=0)
    assert (world.reward(chosen) > world.reward(rejected)).mean() > 0.6
    assert np.allclose(world.transition.sum(1), 1.0)


@pytest.mark.parametrize("call, kwargs, error", [
    (lambda **kw: reward_guided_generate(_lm(), FaRMARewardModel(TinyCausalLM(7, 16, 1, 2, 12)),
                                         torch.full((2, 1), 1), max_new_tokens=4, **kw), {}, "vocabulary"),
    (lambda **kw: reward_guided_generate(_lm(), None, torch.full((2, 1), 1), **kw), {"top_k": 0}, "top_k"),
    (lambda **kw: reward_guided_generate(_lm(), None, torch.full((2, 13), 1), **kw), {}, "max_len"),
    (lambda **kw: reward_guided_generate(_lm(), None, torch.full((2, 10), 1), **kw), {"max_new_tokens": 5},
     "max_new_tokens"),
    (lambda **kw: reward_guided_generate(_lm(), None, torch.full((2, 1), 1.0), **kw), {}, "prompt_ids"),
    (lambda **kw: reward_guided_generate(_lm(), None, torch.full((2, 1), 1), **kw), {"mode": "beam"}, "mode"),
    (lambda **kw: args_generate(_lm(), FaRMARewardModel(_lm()), torch.full((2, 1), 1), max_new_tokens=4, **kw), {},
     "rm must be"),
    (lambda **kw: train_farma(FaRMARewardModel(_lm()), _ids(), _ids(), **kw), {}, "differ"),
    (lambda **kw: train_farma(FaRMARewardModel(_lm()), _ids(), _ids(seed=1), **kw), {"schedule": "x"}, "schedule"),
    (lambda **kw: TinyCausalLM(V, dim=10, n_heads=4, **kw), {}, "divisible"),
    (lambda **kw: TokenWorld(vocab=8, length=9, **kw), {}, "enumerate"),
])
def test_bad_input_is_one_clear_error(call, kwargs, error):
    with pytest.raises((ValueError, TypeError), match=error):
        call(**kwargs)


def test_non_finite_rm_scores_raise():
    class NanLM(nn.Module):
        def forward(self, ids):
            return torch.full((*ids.shape, V), float("nan"))

    with pytest.raises(ValueError, match="non-finite"):
        reward_guided_generate(_lm(), FaRMARewardModel(NanLM()), torch.full((2, 1), 9), max_new_tokens=2)
