"""Unit tests of icml25.attention.dual_attention and icml25.data.relational_games."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.attention import (  # noqa: E402
    Attention,
    DATEncoderClassifier,
    DualAttention,
    DualAttnDecoderBlock,
    DualAttnEncoderBlock,
    DualAttnTransformerLM,
    PositionalSymbolRetriever,
    PositionRelativeSymbolRetriever,
    RelationalAttention,
    SymbolicAttention,
    TransformerBlock,
    make_symbol_retriever,
)
from icml25.data.relational_games import PATTERNS, RelationalGamesLite  # noqa: E402


def _naive_relational_attention(ra: RelationalAttention, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """A_i^h = sum_j alpha_ij^h (r(x_i, x_j) W_r^h + s_j W_s^h), by explicit loops (no einsum)."""
    B, n, _ = x.shape
    H, hd, nr, p = ra.n_heads, ra.head_dim, ra.n_relations, ra.rel_proj_dim
    Wq, Wk = ra.wq_attn.weight.view(H, hd, -1), ra.wk_attn.weight.view(H, hd, -1)
    Rq, Rk = ra.wq_rel.weight.view(nr, p, -1), ra.wk_rel.weight.view(nr, p, -1)
    Ws = ra.wv.weight.view(H, hd, -1)
    out = torch.zeros(B, n, H * hd, dtype=x.dtype)
    for b in range(B):
        for i in range(n):
            heads = []
            for h in range(H):
                logits = torch.stack([(Wq[h] @ x[b, i]) @ (Wk[h] @ x[b, j]) / math.sqrt(hd) for j in range(n)])
                alpha = torch.softmax(logits, 0)
                a = torch.zeros(hd, dtype=x.dtype)
                for j in range(n):
                    r = torch.stack([(Rq[k] @ x[b, i]) @ (Rk[k] @ x[b, j]) / math.sqrt(p) for k in range(nr)])
                    a = a + alpha[j] * (ra.wr[h] @ r + Ws[h] @ s[b, j])
                heads.append(a)
            out[b, i] = ra.wo(torch.cat(heads))
    return out


def test_relational_attention_matches_naive_loop():
    torch.manual_seed(0)
    ra = RelationalAttention(d_model=12, n_heads=3, n_relations=2, rel_proj_dim=5).double()
    x, s = torch.randn(2, 3, 12, dtype=torch.float64), torch.randn(2, 3, 12, dtype=torch.float64)
    out, scores, rel = ra(x, s)
    assert out.shape == (2, 3, 12) and scores.shape == (2, 3, 3, 3) and rel.shape == (2, 3, 3, 2)
    with torch.no_grad():
        torch.testing.assert_close(out, _naive_relational_attention(ra, x, s), atol=1e-5, rtol=0)
    torch.testing.assert_close(scores.sum(-1), torch.ones(2, 3, 3, dtype=torch.float64))


def test_symmetric_relations_are_exactly_symmetric():
    torch.manual_seed(1)
    ra = RelationalAttention(64, 4, symmetric_rels=True)
    rel = ra.relations(torch.randn(8, 6, 64))
    assert torch.equal(rel, rel.transpose(1, 2))
    _, _, rel = ra(torch.randn(8, 6, 64), torch.randn(8, 6, 64))
    assert torch.equal(rel, rel.transpose(1, 2))
    assert not torch.allclose(*(lambda r: (r, r.transpose(1, 2)))(RelationalAttention(16, 4).relations(
        torch.randn(3, 5, 16))))


def test_permuting_objects_with_their_symbols_permutes_the_output():
    torch.manual_seed(2)
    da = DualAttention(16, 2, 2)
    x, s = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    perm = torch.tensor([3, 0, 4, 1, 2])
    out, *_ = da(x, s)
    out_perm, *_ = da(x[:, perm], s[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-5, rtol=1e-5)


def test_no_relational_heads_equals_the_shared_transformer_block():
    torch.manual_seed(3)
    ours = DualAttnEncoderBlock(16, n_heads_sa=4, n_heads_ra=0, dff=32,
                                sa_kwargs={"add_bias_kv": True, "add_bias_out": True})
    ref = TransformerBlock(16, 4, d_ff=32)
    sa = ours.dual_attn.self_attention
    with torch.no_grad():
        ref.attn.qkv.weight.copy_(torch.cat([sa.wq.weight, sa.wk.weight, sa.wv.weight]))
        ref.attn.qkv.bias.copy_(torch.cat([torch.zeros(16), sa.wk.bias, sa.wv.bias]))
        ref.attn.out.weight.copy_(sa.wo.weight)
        ref.attn.out.bias.copy_(sa.wo.bias)
        ref.mlp.load_state_dict(ours.ff_block.state_dict())
        ref.norm1.load_state_dict(ours.norm1.state_dict())
        ref.norm2.load_state_dict(ours.norm2.state_dict())
    x = torch.randn(2, 6, 16)
    torch.testing.assert_close(ours(x, None), ref(x), atol=1e-5, rtol=1e-5)


def test_fully_masked_row_gives_zeros_not_nan():
    torch.manual_seed(4)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    da = DualAttention(16, 2, 2)
    x, s = torch.randn(2, 4, 16), torch.randn(2, 4, 16)
    x.requires_grad_(True)
    out, sa_scores, (ra_scores, _) = da(x, s, attn_mask=mask, need_weights=True)
    assert torch.isfinite(out).all()
    assert torch.equal(sa_scores[:, :, 2], torch.zeros(2, 2, 4))
    assert torch.equal(ra_scores[:, :, 2], torch.zeros(2, 2, 4))
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_causal_mask_ignores_the_future():
    torch.manual_seed(5)
    da = DualAttention(16, 2, 2)
    x, s = torch.randn(1, 5, 16), torch.randn(1, 5, 16)
    out1, *_ = da(x, s, is_causal=True)
    x2, s2 = x.clone(), s.clone()
    x2[:, 3:] += 1.0
    s2[:, 3:] -= 1.0
    out2, *_ = da(x2, s2, is_causal=True)
    torch.testing.assert_close(out1[:, :3], out2[:, :3])
    assert not torch.allclose(out1[:, 3:], out2[:, 3:])


def test_single_object_and_relative_symbols_and_gqa():
    torch.manual_seed(6)
    ra = RelationalAttention(16, 4, n_kv_heads=2, use_relative_positional_symbols=True)
    retriever = PositionRelativeSymbolRetriever(16, max_rel_pos=2)
    for n in (1, 6):
        x = torch.randn(3, n, 16)
        symbols = retriever(x)
        assert symbols.shape == (n, n, 16)
        out, _, rel = ra(x, symbols)
        assert out.shape == (3, n, 16) and rel.shape == (3, n, n, 4)
    x = torch.randn(1, 6, 16)
    s = retriever(x)
    torch.testing.assert_close(s[0, 5], s[0, 3])  # relative positions +5 and +3 both clip to +2
    torch.testing.assert_close(s[1, 2], s[4, 5])


def test_symbol_retrievers_shapes():
    x = torch.randn(2, 7, 16)
    assert PositionalSymbolRetriever(16, 8)(x).shape == (2, 7, 16)
    pos = PositionalSymbolRetriever(16, 8)
    torch.testing.assert_close(pos(x)[0], pos(x)[1])
    assert SymbolicAttention(16, 4, 10)(x).shape == (2, 7, 16)
    assert isinstance(make_symbol_retriever("symbolic_attention", 16, n_heads=2, n_symbols=4), SymbolicAttention)


def test_share_attn_params_ties_the_projections():
    da = DualAttention(16, 2, 2, share_attn_params=True)
    assert da.relational_attention.wq_attn is da.self_attention.wq
    n_shared = sum(p.numel() for p in da.parameters())
    assert n_shared < sum(p.numel() for p in DualAttention(16, 2, 2).parameters())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_model": 10, "n_heads_sa": 2, "n_heads_ra": 1}, "divisible"),
        ({"d_model": 16, "n_heads_sa": 0, "n_heads_ra": 0}, "both be 0"),
        ({"d_model": 24, "n_heads_sa": 2, "n_heads_ra": 1, "share_attn_params": True}, "share_attn_params"),
        ({"d_model": 16, "n_heads_sa": -1, "n_heads_ra": 2}, "n_heads_sa must be an integer >= 0, got -1"),
        ({"d_model": 16, "n_heads_sa": 2, "n_heads_ra": 2, "dropout": 1.5},
         r"dropout must be a real number in \[0, 1\), got 1.5"),
    ],
)
def test_dual_attention_rejects_bad_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DualAttention(**kwargs)


def test_relational_attention_rejects_bad_configs():
    with pytest.raises(ValueError, match="n_kv_heads"):
        RelationalAttention(16, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="rel_proj_dim"):
        RelationalAttention(16, 4, n_relations=3)
    with pytest.raises(ValueError, match="rel_activation"):
        RelationalAttention(16, 4, rel_activation="swish")
    with pytest.raises(ValueError, match="n_kv_heads"):
        Attention(16, 4, n_kv_heads=3)


def test_bad_inputs_are_rejected():
    ra = RelationalAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"symbols \(batch, n, d_model\) must have shape \(2, 5, 16\)"):
        ra(x, torch.randn(2, 4, 16))
    with pytest.raises(ValueError, match=r"relative symbols"):
        RelationalAttention(16, 4, use_relative_positional_symbols=True)(x, torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match="not both"):
        ra(x, torch.randn(2, 5, 16), attn_mask=torch.ones(5, 5, dtype=torch.bool), is_causal=True)
    with pytest.raises(TypeError, match="boolean"):
        ra(x, torch.randn(2, 5, 16), attn_mask=torch.ones(5, 5))
    with pytest.raises(ValueError, match="attn_mask must have shape"):
        ra(x, torch.randn(2, 5, 16), attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"shape \(batch, length, 16\)"):
        ra(torch.randn(2, 5, 8), torch.randn(2, 5, 16))
    with pytest.raises(TypeError, match="floating-point"):
        ra(x, torch.ones(2, 5, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="exceeds max_length=4"):
        PositionalSymbolRetriever(16, 4)(x)
    with pytest.raises(ValueError, match="need symbols"):
        DualAttention(16, 2, 2)(x, None)
    with pytest.raises(ValueError, match="symbol_retrieval must be one of"):
        make_symbol_retriever("random", 16)
    model = DATEncoderClassifier(8, 2, 16, 1, 2, 2, max_len=4)
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        model(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"shape \(batch, length, 8\)"):
        model(torch.randn(2, 4))
    lm = DualAttnTransformerLM(20, 16, 1, 2, 2, max_block_size=8)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 20\)"):
        lm(torch.full((1, 4), 25))
    with pytest.raises(TypeError, match="integer torch.Tensor"):
        lm(torch.randn(1, 4))
    with pytest.raises(ValueError, match=r"idx must have shape \(batch, length\)"):
        lm(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="pool must be one of 'mean', 'flatten'"):
        DATEncoderClassifier(8, 2, 16, 1, 2, 2, pool="max")
    with pytest.raises(TypeError, match="symmetric_rels must be True or False"):
        RelationalAttention(16, 4, symmetric_rels=1)


def test_models_forward_backward_and_determinism():
    def build():
        torch.manual_seed(7)
        return DATEncoderClassifier(8, 3, 16, 2, 2, 2, max_len=6, ra_kwargs={"symmetric_rels": True}, pool="flatten")
    x = torch.randn(4, 6, 8)
    a, b = build()(x), build()(x)
    assert a.shape == (4, 3) and torch.equal(a, b)
    a.sum().backward()
    lm = DualAttnTransformerLM(30, 16, 2, 2, 2, max_block_size=10)
    idx = torch.randint(0, 30, (2, 10))
    logits, loss = lm(idx, idx)
    assert logits.shape == (2, 10, 30) and abs(loss.item() - math.log(30)) < 1.0
    loss.backward()
    dec = DualAttnDecoderBlock(16, 2, 2, n_heads_cross=4, norm_first=False)
    assert dec(torch.randn(2, 5, 16), torch.randn(2, 3, 16), torch.randn(2, 5, 16)).shape == (2, 5, 16)
    enc = DualAttnEncoderBlock(16, 2, 2, norm_first=False, norm_type="rmsnorm")
    assert enc(torch.randn(2, 5, 16), torch.randn(2, 5, 16)).shape == (2, 5, 16)


def test_dat_learns_same_different_on_unseen_objects():
    from icml25.utils.nn import accuracy, train_classifier

    games = RelationalGamesLite("same_different", n_objects_bank=32, d_obj=16, seed=0)
    X, y = map(torch.as_tensor, games.sample(256, "train", seed=1))
    X_ood, y_ood = map(torch.as_tensor, games.sample(400, "test", seed=2))
    torch.manual_seed(0)
    model = DATEncoderClassifier(16, 2, 32, 1, 0, 2, dff=64, max_len=2, pos_enc=None,
                                 ra_kwargs={"symmetric_rels": True})
    train_classifier(model, X, y, epochs=20, batch_size=64, lr=3e-3, optimizer=torch.optim.AdamW, seed=0)
    assert accuracy(model, X_ood, y_ood) > 0.8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    model = DATEncoderClassifier(8, 2, 16, 2, 2, 2, max_len=6).cuda()
    assert model(torch.randn(3, 6, 8, device="cuda")).device.type == "cuda"
    lm = DualAttnTransformerLM(20, 16, 1, 2, 2, max_block_size=8, symbol_retrieval="position_relative").cuda()
    assert lm(torch.randint(0, 20, (2, 8), device="cuda"))[0].device.type == "cuda"


# ---- data: relational games ----------------------------------------------------------------------------------


def _pattern(triple: np.ndarray) -> str:
    letters, seen = "", []
    for obj in triple:
        if obj not in seen:
            seen.append(obj)
        letters += "ABC"[seen.index(obj)]
    return letters


def test_relational_games_labels_are_correct():
    games = RelationalGamesLite("match_pattern", n_objects_bank=16, noise=0.0, seed=0)
    X, y = games.sample(200, seed=1)
    assert X.shape == (200, 6, 32) and X.dtype == np.float32 and y.mean() == 0.5
    bank = games.banks["train"].astype(np.float32)
    ids = np.argmin(((X[:, :, None, :] - bank[None, None]) ** 2).sum(-1), axis=-1)
    for row, label in zip(ids, y, strict=True):
        p1, p2 = _pattern(row[:3]), _pattern(row[3:])
        assert p1 in PATTERNS and p2 in PATTERNS and (p1 == p2) == bool(label)
        assert not set(row[:3]) & set(row[3:])
    sd = RelationalGamesLite("same_different", noise=0.0, seed=0)
    X, y = sd.sample(50, seed=2)
    np.testing.assert_array_equal(np.all(X[:, 0] == X[:, 1], axis=-1), y == 1)
    occ = RelationalGamesLite("occurs", noise=0.0, n_bottom=4, seed=0)
    X, y = occ.sample(50, seed=3)
    assert X.shape == (50, 5, 32)
    np.testing.assert_array_equal(np.any(np.all(X[:, 1:] == X[:, :1], axis=-1), axis=1), y == 1)
    bet = RelationalGamesLite("between", noise=0.0, seed=0)
    X, y = bet.sample(50, "test", seed=4)
    proj = X @ bet.direction.astype(np.float32)
    middle = (proj[:, 1] - proj[:, 0]) * (proj[:, 2] - proj[:, 1]) > 0
    np.testing.assert_array_equal(middle, y == 1)


def test_relational_games_banks_and_determinism():
    games = RelationalGamesLite("same_different", seed=0)
    assert not np.allclose(games.banks["train"], games.banks["test"])
    shared = RelationalGamesLite("same_different", split_banks=False)
    assert shared.banks["test"] is shared.banks["train"]
    a, b = games.sample(20, "test", seed=5), games.sample(20, "test", seed=5)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_relational_games_bad_input():
    with pytest.raises(ValueError, match="task must be one of"):
        RelationalGamesLite("count")
    with pytest.raises(ValueError, match="n_objects_bank must be an integer >= 6"):
        RelationalGamesLite("match_pattern", n_objects_bank=5)
    with pytest.raises(ValueError, match=r"noise must be a real number in \[0, inf\), got -1.0"):
        RelationalGamesLite(noise=-1.0)
    with pytest.raises(ValueError, match="noise must be a real number"):
        RelationalGamesLite(noise=float("inf"))
    with pytest.raises(ValueError, match="split must be one of 'train', 'test'"):
        RelationalGamesLite().sample(4, "val")
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1, got 0"):
        RelationalGamesLite().sample(0)
    with pytest.raises(TypeError, match="n_samples must be an integer"):
        RelationalGamesLite().sample(4.0)


def test_seed_fixes_the_weights_and_leaves_the_global_rng_alone():
    """Issue 19: construction with seed= is reproducible and does not advance torch's global RNG."""
    from icml25.attention import DualAttnTransformerLM, TransformerStack

    kw = {"d_in": 4, "n_classes": 2, "d_model": 8, "n_layers": 1, "n_heads_sa": 1, "n_heads_ra": 1, "max_len": 4}
    state = torch.random.get_rng_state()
    a, b = DATEncoderClassifier(**kw, seed=3), DATEncoderClassifier(**kw, seed=3)
    lm = DualAttnTransformerLM(11, 8, 1, 1, 1, max_block_size=8, seed=0)
    TransformerStack(1, 8, 2, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    torch.manual_seed(0)                                       # seed=None: the global RNG, as before
    c = DATEncoderClassifier(**kw)
    torch.manual_seed(0)
    d = DATEncoderClassifier(**kw)
    assert all(torch.equal(p, q) for p, q in zip(c.parameters(), d.parameters(), strict=True))
    out = lm.double()(torch.zeros(2, 3, dtype=torch.long))[0]
    assert out.dtype == torch.float64


def test_forward_arguments_get_one_clear_error():
    """Issue 19: bad forward arguments raise a ValueError/TypeError naming them."""
    from icml25.attention import Attention, DualAttnTransformerLM, SelfAttention, check_tokens
    from icml25.attention.transformer import MLP

    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        check_tokens(x, "abc")
    with pytest.raises(ValueError, match="x must have shape"):
        MLP(8, 16)(torch.randn(2, 3, 4))
    with pytest.raises(TypeError, match="is_causal must be True or False"):
        Attention(8, 2)(x, x, x, is_causal="abc")
    with pytest.raises(ValueError, match="query must have shape"):
        Attention(8, 2).attention_scores(x[0], x)
    with pytest.raises(ValueError, match="x of shape"):
        RelationalAttention(8, 2)(x[:0], x)
    with pytest.raises(TypeError, match="targets must be a torch.Tensor"):
        DualAttnTransformerLM(11, 8, 1, 1, 1, max_block_size=8)(torch.zeros(2, 3, dtype=torch.long), "abc")
    with pytest.raises(TypeError, match="sa_kwargs must be a dict"):
        DualAttention(8, 1, 1, sa_kwargs="abc")
    assert SelfAttention(8, 2)(x[:0]).shape == (0, 3, 8)      # an empty batch is a valid batch
