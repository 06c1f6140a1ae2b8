"""Unit tests of icml25.optim.squisher: the Squisher read from optimizer state, the Fisher, and the consumers."""

from __future__ import annotations

import copy
import io

import pytest
import torch
from torch import nn

from icml25.data.tensors import digits_tensors
from icml25.optim.squisher import (
    EWCPenalty,
    apply_masks,
    average_merge,
    compare_importance,
    ewc_loss,
    fish_mask,
    fisher_diagonal,
    fisher_merge,
    magnitude_importance,
    magnitude_prune,
    masked_finetune,
    obd_prune,
    random_importance,
    random_mask,
    random_prune,
    read_squisher,
    task_arithmetic,
    top_fraction_masks,
    ugm_merge,
    uniform_importance,
)
from icml25.utils.nn import make_mlp, train_classifier


def _one_step(opt_cls, **kw):
    """A linear model after one optimizer step on a loss whose gradient is known: g = [[1, 2, 3], [4, 5, 6]]."""
    model = nn.Linear(3, 2, bias=False)
    opt = opt_cls(model.parameters(), lr=0.1, **kw)
    g = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (model.weight * g).sum().backward()
    opt.step()
    return model, opt, g


# ----------------------------------------------------------------------------- read_squisher

@pytest.mark.parametrize("opt_cls", [torch.optim.Adam, torch.optim.AdamW, torch.optim.NAdam, torch.optim.RAdam,
                                     torch.optim.RMSprop, torch.optim.Adadelta, torch.optim.Adagrad])
def test_one_step_second_moment_is_the_squared_gradient(opt_cls):
    model, opt, g = _one_step(opt_cls)
    raw = read_squisher(opt, model, scale="raw")
    torch.testing.assert_close(raw["weight"], g ** 2)


def test_scalings_for_mean_and_sum_reduction():
    model, opt, g = _one_step(torch.optim.Adam)
    n, b = 100, 8
    mean = read_squisher(opt, model, n_data=n, batch_size=b)["weight"]
    torch.testing.assert_close(mean, n * b * g ** 2)                                   # F ≈ N·B·v
    summed = read_squisher(opt, model, n_data=n, batch_size=b, reduction="sum")["weight"]
    torch.testing.assert_close(summed, n / b * g ** 2)                                  # F ≈ N/B·v
    per_example = read_squisher(opt, model, n_data=n, batch_size=b, scale="per_example")["weight"]
    torch.testing.assert_close(per_example, b * g ** 2)


def test_bias_correction_switch():
    model, opt, g = _one_step(torch.optim.Adam, betas=(0.9, 0.99))
    raw = read_squisher(opt, model, scale="raw", bias_correction=False)["weight"]
    torch.testing.assert_close(raw, 0.01 * g ** 2)
    torch.testing.assert_close(raw, opt.state[model.weight]["exp_avg_sq"])


def test_state_dict_after_checkpoint_matches_live_optimizer():
    model = make_mlp([4, 5, 3], seed=0)
    opt = train_classifier(model, torch.randn(40, 4, generator=torch.Generator().manual_seed(0)),
                           torch.arange(40) % 3, epochs=2, batch_size=8)
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer)
    live = read_squisher(opt, model, n_data=40, batch_size=8)
    saved = read_squisher(state, model, n_data=40, batch_size=8)
    assert set(live) == set(saved) == {n for n, _ in model.named_parameters()}
    for k in live:
        torch.testing.assert_close(live[k], saved[k])


def test_state_dict_of_trainable_subset_and_explicit_names():
    model = make_mlp([4, 5, 3], seed=0)
    model[0].weight.requires_grad_(False)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])
    model(torch.randn(6, 4)).sum().backward()
    opt.step()
    state = opt.state_dict()
    with pytest.raises(ValueError, match="strict=False"):
        read_squisher(state, model, scale="raw")
    with pytest.warns(UserWarning, match="skipped"):
        out = read_squisher(state, model, scale="raw", strict=False)
    assert set(out) == {"0.bias", "2.weight", "2.bias"}
    with pytest.warns(UserWarning, match="0.weight"):
        named = read_squisher(state, model, scale="raw", strict=False, param_names=["0.bias", "2.weight", "2.bias"])
    for k in out:
        torch.testing.assert_close(out[k], named[k])
    with pytest.raises(ValueError, match="optimizer parameters"):
        read_squisher(state, model, scale="raw", param_names=["0.bias"])
    with pytest.raises(ValueError, match="shape"):
        read_squisher(state, model, scale="raw", strict=False, param_names=["2.weight", "0.bias", "2.bias"])


def test_parameter_the_optimizer_has_not_seen_is_an_error():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    opt = torch.optim.Adam(model[0].parameters())
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    with pytest.raises(ValueError, match=r"no second moment for 2 parameter\(s\) \['1.weight', '1.bias'\]"):
        read_squisher(opt, model, scale="raw")
    with pytest.warns(UserWarning):
        assert set(read_squisher(opt, model, scale="raw", strict=False)) == {"0.weight", "0.bias"}


def test_optimizers_without_second_moment_and_bad_input():
    model = nn.Linear(3, 2)
    for opt in (torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)):
        model(torch.randn(4, 3)).sum().backward()
        opt.step()
        with pytest.raises(ValueError, match="SGD keeps no second-moment state"):
            read_squisher(opt, model, scale="raw")
    adamax_model, adamax, _ = _one_step(torch.optim.Adamax)
    with pytest.raises(ValueError, match="Adamax keeps no second-moment state"):
        read_squisher(adamax, adamax_model, scale="raw")
    fresh = torch.optim.Adam(model.parameters())
    with pytest.raises(ValueError, match="no step taken yet"):
        read_squisher(fresh, model, scale="raw")
    factored_model, factored, _ = _one_step(torch.optim.Adafactor)
    with pytest.raises(NotImplementedError, match="factored"):
        read_squisher(factored, factored_model, scale="raw")
    m, opt, _ = _one_step(torch.optim.Adam)
    with pytest.raises(ValueError, match="n_data must be an integer >= 1"):
        read_squisher(opt, m)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        read_squisher(opt, m, n_data=10, batch_size=0)
    with pytest.raises(ValueError, match="scale must be one of"):
        read_squisher(opt, m, scale="fisher")
    with pytest.raises(ValueError, match="reduction must be one of"):
        read_squisher(opt, m, scale="raw", reduction="none")
    with pytest.raises(TypeError, match="torch.optim.Optimizer or its state_dict"):
        read_squisher([1, 2], m, scale="raw")
    other = nn.Linear(2, 3, bias=False)
    with pytest.raises(ValueError, match="is this the optimizer of this model"):
        read_squisher(opt.state_dict(), other, scale="raw")
    quantized = {"state": {0: {"step": torch.tensor(1.0), "state2": torch.zeros(2, 3, dtype=torch.uint8)}},
                 "param_groups": [{"params": [0], "betas": (0.9, 0.999)}]}
    with pytest.raises(TypeError, match="quantized"):
        read_squisher(quantized, m, scale="raw")


def test_dtype_and_shapes_follow_the_parameters():
    model = nn.Linear(3, 2).double()
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(5, 3, dtype=torch.float64)).sum().backward()
    opt.step()
    out = read_squisher(opt, model, n_data=5, batch_size=5)
    assert all(out[k].dtype == torch.float64 and out[k].shape == p.shape for k, p in model.named_parameters())


@pytest.fixture(scope="module")
def trained():
    """A small digits MLP after real Adam training (a few seconds)."""
    data = digits_tensors(seed=0)
    model = make_mlp([64, 32, 10], seed=0)
    opt = train_classifier(model, data.X_train, data.y_train, epochs=8, batch_size=32, seed=0)
    return data, model, opt


def test_squisher_after_real_training_ranks_and_scales_like_the_fisher(trained):
    data, model, opt = trained
    sq = read_squisher(opt, model, n_data=len(data.X_train), batch_size=32)
    fisher = fisher_diagonal(model, data.X_train, max_examples=400, n_data=len(data.X_train))
    close, mag = compare_importance(sq, fisher), compare_importance(magnitude_importance(model), fisher)
    assert close["spearman"] > 0.8 > mag["spearman"]
    assert abs(close["median_log10_ratio"]) < 1.0     # the N·B scaling puts v on the Fisher's scale


# ----------------------------------------------------------------------------- fisher_diagonal

def _loop_fisher(model, X, y=None):
    """Reference: explicit loop over examples (and classes, weighted by p, when y is None)."""
    params = list(model.named_parameters())
    out = {k: torch.zeros_like(p) for k, p in params}
    for i, x in enumerate(X):
        logp = torch.log_softmax(model(x[None]), dim=-1)[0]
        classes = range(len(logp)) if y is None else [int(y[i])]
        for c in classes:
            grads = torch.autograd.grad(logp[c], [p for _, p in params], retain_graph=True)
            weight = logp[c].exp().detach() if y is None else 1.0
            for (k, _), g in zip(params, grads, strict=True):
                out[k] += weight * g ** 2
    return out


def test_exact_and_empirical_fisher_match_an_explicit_loop():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    X, y = torch.randn(7, 4), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    for got, ref in ((fisher_diagonal(model, X, chunk_size=3), _loop_fisher(model, X)),
                     (fisher_diagonal(model, X, y, mode="empirical", chunk_size=3), _loop_fisher(model, X, y)),
                     (fisher_diagonal(model, X, y, mode="empirical", batch_size=1), _loop_fisher(model, X, y))):
        for k in ref:
            torch.testing.assert_close(got[k], ref[k], rtol=1e-4, atol=1e-6)


def _max_relative(a, b):
    return max(float((a[k] - b[k]).abs().max()) for k in b) / max(float(b[k].abs().max()) for k in b)


def test_linear_layer_path_equals_the_loop_and_the_vmap_path_in_float64():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    X, y = torch.randn(11, 4, dtype=torch.float64), torch.randint(0, 3, (11,))
    for kw, ref in (({}, _loop_fisher(model, X)), ({"y": y, "mode": "empirical"}, _loop_fisher(model, X, y))):
        for chunk in (None, 4):
            assert _max_relative(fisher_diagonal(model, X, method="linear", chunk_size=chunk, **kw), ref) < 1e-12
        assert _max_relative(fisher_diagonal(model, X, method="vmap", **kw), ref) < 1e-12
    sampled = {m: fisher_diagonal(model, X, mode="sampled", n_samples=3, chunk_size=4, seed=3, method=m)
               for m in ("linear", "vmap")}
    assert _max_relative(sampled["linear"], sampled["vmap"]) < 1e-12
    frozen = copy.deepcopy(model)
    frozen[0].weight.requires_grad_(False)
    got, ref = fisher_diagonal(frozen, X, method="linear"), fisher_diagonal(frozen, X, method="vmap")
    assert set(got) == set(ref) == {"0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}
    assert _max_relative(got, ref) < 1e-12


def test_linear_layer_path_applies_only_to_plain_linear_models():
    torch.manual_seed(0)
    X = torch.randn(5, 4)

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(torch.tanh(self.lin(x)))

    for model in (nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Linear(6, 3)), Twice()):
        with pytest.raises(ValueError, match="method='linear' does not apply"):
            fisher_diagonal(model, X, method="linear")
        torch.testing.assert_close(fisher_diagonal(model, X), fisher_diagonal(model, X, method="vmap"))
    dropout = nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.5), nn.Linear(6, 3))
    with pytest.raises(ValueError, match="Dropout in training mode"):
        fisher_diagonal(dropout, X, method="linear")
    dropout.eval()                   # the identity in eval mode: the linear path applies
    torch.testing.assert_close(fisher_diagonal(dropout, X, method="linear"), fisher_diagonal(dropout, X, method="vmap"))
    with pytest.raises(ValueError, match="does not apply"):
        fisher_diagonal(nn.Linear(4, 3), torch.randn(5, 2, 4), method="linear")
    with pytest.raises(ValueError, match="method"):
        fisher_diagonal(nn.Linear(4, 3), X, method="loop")


def test_minibatch_fisher_squares_batch_means():
    torch.manual_seed(1)
    model = nn.Linear(3, 2)
    X, y = torch.randn(5, 3), torch.tensor([0, 1, 1, 0, 1])
    got = fisher_diagonal(model, X, y, mode="empirical", batch_size=2)
    ref = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    for start in range(0, 5, 2):
        xb, yb = X[start:start + 2], y[start:start + 2]
        loglik = torch.log_softmax(model(xb), -1).gather(1, yb[:, None]).mean()
        grads = torch.autograd.grad(loglik, list(model.parameters()))
        for (k, _), g in zip(model.named_parameters(), grads, strict=True):
            ref[k] += len(xb) ** 2 * g ** 2
    for k in ref:
        torch.testing.assert_close(got[k], ref[k])


def test_sampled_fisher_is_seeded_and_unbiased_for_the_exact_one():
    torch.manual_seed(2)
    model = nn.Linear(3, 4)
    X = torch.randn(20, 3)
    a = fisher_diagonal(model, X, mode="sampled", n_samples=400, seed=5)
    b = fisher_diagonal(model, X, mode="sampled", n_samples=400, seed=5)
    exact = fisher_diagonal(model, X)
    for k in exact:
        torch.testing.assert_close(a[k], b[k])
        torch.testing.assert_close(a[k], exact[k], rtol=0.15, atol=1e-3)


def test_fisher_subset_rescaling_and_bad_input():
    torch.manual_seed(3)
    model = nn.Linear(3, 2)
    X, y = torch.randn(10, 3), torch.randint(0, 2, (10,))
    sub = fisher_diagonal(model, X, max_examples=4, n_data=100)
    first4 = fisher_diagonal(model, X[:4])
    per_example = fisher_diagonal(model, X, max_examples=4, scale="per_example")
    for k in sub:
        torch.testing.assert_close(sub[k], first4[k] * 25)
        torch.testing.assert_close(per_example[k], first4[k] / 4)
    with pytest.raises(ValueError, match="mode must be one of"):
        fisher_diagonal(model, X, mode="true")
    with pytest.raises(ValueError, match="needs labels y"):
        fisher_diagonal(model, X, mode="empirical")
    with pytest.raises(ValueError, match="use mode='sampled' or 'empirical'"):
        fisher_diagonal(model, X, batch_size=4)
    with pytest.raises(ValueError, match="X must be a tensor"):
        fisher_diagonal(model, X[:0])
    with pytest.raises(ValueError, match="max_examples must be an integer >= 1"):
        fisher_diagonal(model, X, y, mode="empirical", max_examples=0)


# ----------------------------------------------------------------------------- importance helpers

def test_compare_importance_known_values_and_mismatch():
    a = {"w": torch.tensor([1.0, 2.0, 3.0, 4.0])}
    same = compare_importance(a, a)
    assert same["spearman"] == pytest.approx(1.0) and same["median_log10_ratio"] == pytest.approx(0.0)
    ten = compare_importance({"w": a["w"] * 10}, a)
    assert ten["spearman"] == pytest.approx(1.0) and ten["median_log10_ratio"] == pytest.approx(1.0)
    assert ten["cosine"] == pytest.approx(1.0)
    assert compare_importance({"w": a["w"].flip(0)}, a)["spearman"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="different keys"):
        compare_importance(a, {"v": a["w"]})
    with pytest.raises(ValueError, match="a must contain only finite values"):
        compare_importance({"w": torch.tensor([1.0, float("nan"), 3.0, 4.0])}, a)
    with pytest.raises(TypeError, match="eps must be a real number"):
        compare_importance(a, a, eps="tiny")


def test_baseline_importances():
    model = nn.Linear(3, 2)
    assert all(torch.equal(v, p.detach().abs()) for (_, p), v in zip(model.named_parameters(),
                                                                        magnitude_importance(model).values(),
                                                                        strict=True))
    assert all(torch.all(v == 1) for v in uniform_importance(model).values())
    r1, r2 = random_importance(model, seed=4), random_importance(model, seed=4)
    assert all(torch.equal(r1[k], r2[k]) for k in r1)
    assert not torch.equal(r1["weight"], random_importance(model, seed=5)["weight"])


# ----------------------------------------------------------------------------- merging

def test_fisher_merge_known_answer_fallback_and_purity():
    a, b = {"w": torch.tensor([1.0, 1.0, 1.0])}, {"w": torch.tensor([5.0, 5.0, 5.0])}
    fa, fb = {"w": torch.tensor([1.0, 0.0, 0.0])}, {"w": torch.tensor([3.0, 2.0, 0.0])}
    merged = fisher_merge([a, b], [fa, fb], minimal_fisher_weight=0.0)
    torch.testing.assert_close(merged["w"], torch.tensor([4.0, 5.0, 3.0]))   # last entry: zero F -> average
    assert not torch.isnan(merged["w"]).any()
    assert torch.equal(a["w"], torch.ones(3)) and torch.equal(fa["w"], torch.tensor([1.0, 0.0, 0.0]))
    ones = fisher_merge([a, b], [uniform_importance(a), uniform_importance(b)], weights=[3, 1])
    torch.testing.assert_close(ones["w"], average_merge([a, b], weights=[3, 1])["w"])
    torch.testing.assert_close(average_merge([a, b])["w"], torch.full((3,), 3.0))
    excluded = fisher_merge([a, b], [fa, fb], exclude_param_names_regex=["w"])
    torch.testing.assert_close(excluded["w"], torch.full((3,), 3.0))
    normalized = fisher_merge([a, b], [{"w": fa["w"] * 100}, fb], normalize_fisher_weight=True,
                              minimal_fisher_weight=0.0)
    torch.testing.assert_close(normalized, fisher_merge([a, b], [{"w": fa["w"] / fa["w"].norm()},
                                                              {"w": fb["w"] / fb["w"].norm()}],
                                                      minimal_fisher_weight=0.0))


def test_fisher_merge_bad_input():
    a, b = {"w": torch.ones(3)}, {"w": torch.ones(3)}
    with pytest.raises(ValueError, match="different parameter names"):
        fisher_merge([a, {"v": torch.ones(3)}], [a, a])
    with pytest.raises(ValueError, match="shape"):
        average_merge([a, {"w": torch.ones(4)}])
    with pytest.raises(ValueError, match="got 1 importances for 2 state dicts"):
        fisher_merge([a, b], [a])
    with pytest.raises(ValueError, match="weights must be 2 non-negative numbers"):
        fisher_merge([a, b], [a, b], weights=[1, -1])
    with pytest.raises(ValueError, match="covers different parameters"):
        fisher_merge([a, b], [a, {}])
    with pytest.raises(ValueError, match="non-empty sequence"):
        average_merge([])


def test_ugm_limits_and_formula():
    base = {"w": torch.zeros(2)}
    t1, t2 = {"w": torch.tensor([1.0, 2.0])}, {"w": torch.tensor([3.0, -1.0])}
    f1, f2 = {"w": torch.tensor([1.0, 4.0])}, {"w": torch.tensor([3.0, 0.0])}
    huge = ugm_merge(base, [t1, t2], [f1, f2], prior_precision=1e12)
    torch.testing.assert_close(huge["w"], task_arithmetic(base, [t1, t2])["w"])
    single = ugm_merge(base, [t1], [f1], prior_precision=1e-9)
    torch.testing.assert_close(single["w"], t1["w"])
    delta = 2.0
    expected = ((delta + f1["w"]) * t1["w"] + (delta + f2["w"]) * t2["w"]) / (delta + f1["w"] + f2["w"])
    torch.testing.assert_close(ugm_merge(base, [t1, t2], [f1, f2], prior_precision=delta)["w"], expected)
    torch.testing.assert_close(task_arithmetic(base, [t1, t2], alphas=[0.5, 1.0])["w"], torch.tensor([3.5, 0.0]))
    with pytest.raises(ValueError, match=r"prior_precision must be a real number in \(0, inf\)"):
        ugm_merge(base, [t1], [f1], prior_precision=0.0)
    with pytest.raises(ValueError, match="alphas must be"):
        ugm_merge(base, [t1, t2], [f1, f2], alphas=[1.0])


# ----------------------------------------------------------------------------- pruning and masks

def test_obd_prunes_lowest_saliency_globally_and_per_layer():
    params = {"a": torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "b": torch.tensor([[10.0, 0.1]])}
    fisher = {"a": torch.tensor([[4.0, 0.0], [1.0, 1.0]]), "b": torch.tensor([[0.0, 100.0]])}
    # saliency F θ²/2: a = [[2, 0], [4.5, 8]], b = [[0, 0.5]]
    masks = obd_prune(params, fisher, sparsity=0.5)
    assert masks["a"].tolist() == [[True, False], [True, True]] and masks["b"].tolist() == [[False, False]]
    per_layer = obd_prune(params, fisher, sparsity=0.5, scope="layer")
    assert per_layer["a"].tolist() == [[False, False], [True, True]] and per_layer["b"].tolist() == [[False, True]]
    mag = magnitude_prune(params, sparsity=0.5)
    assert mag["a"].tolist() == [[False, False], [True, True]] and mag["b"].tolist() == [[True, False]]
    with pytest.raises(ValueError, match=r"sparsity must be a real number in \(0, 1\)"):
        obd_prune(params, fisher, sparsity=1.0)
    with pytest.raises(ValueError, match="no importance"):
        obd_prune(params, {"a": fisher["a"]}, sparsity=0.5)
    with pytest.raises(ValueError, match="scope must be"):
        magnitude_prune(params, sparsity=0.5, scope="row")


def test_masks_count_ties_and_determinism():
    scores = {"x": torch.ones(10)}
    mask = top_fraction_masks(scores, 0.3)["x"]
    assert mask.tolist() == [False] * 7 + [True] * 3                 # ties: deterministic, keeps the tail
    model = make_mlp([8, 16, 4], seed=0)
    r1, r2 = random_prune(model, 0.75, seed=1), random_prune(model, 0.75, seed=1)
    assert set(r1) == {"0.weight", "2.weight"}                       # weights only by default
    assert all(torch.equal(r1[k], r2[k]) for k in r1)
    assert sum(int(m.sum()) for m in r1.values()) == round(0.25 * (8 * 16 + 16 * 4))


def test_apply_masks_copy_and_inplace():
    model = nn.Linear(2, 2)
    masks = {"weight": torch.tensor([[True, False], [False, True]])}
    before = model.weight.detach().clone()
    state = apply_masks(model, masks)
    assert torch.equal(model.weight.detach(), before)
    assert torch.equal(state["weight"], before * masks["weight"])
    apply_masks(model, masks, inplace=True)
    assert torch.equal(model.weight.detach(), before * masks["weight"])
    with pytest.raises(ValueError, match="has no parameter of shape"):
        apply_masks(model, {"weight": torch.ones(3, dtype=torch.bool)})


def test_fish_mask_and_masked_finetune_freeze_the_rest():
    importance = {"a": torch.tensor([0.1, 5.0, 0.2, 3.0]), "b": torch.tensor([[4.0, 0.0]])}
    mask = fish_mask(importance, 0.5)
    assert mask["a"].tolist() == [False, True, False, True] and mask["b"].tolist() == [[True, False]]
    with pytest.raises(ValueError, match=r"keep_fraction must be a real number in \(0, 1\)"):
        fish_mask(importance, 0.0)
    model = make_mlp([6, 5, 3], seed=0)
    masks = random_mask(model, 0.2, seed=0)
    assert set(masks) == {k for k, _ in model.named_parameters()}
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    X, y = torch.randn(30, 6, generator=torch.Generator().manual_seed(0)), torch.arange(30) % 3
    masked_finetune(model, masks, X, y, epochs=3, batch_size=10, lr=0.05)
    changed = 0
    for k, p in model.named_parameters():
        assert torch.equal(p.detach()[~masks[k]], before[k][~masks[k]])
        changed += int((p.detach() != before[k]).sum())
    assert changed > 0
    with pytest.raises(ValueError, match="without weight decay"):
        masked_finetune(model, masks, X, y, weight_decay=0.1)


# ----------------------------------------------------------------------------- EWC

def test_ewc_penalty_value_gradient_and_modes():
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 2.0]]))
    penalty = EWCPenalty(lam=4.0)
    assert float(penalty(model).detach()) == 0.0
    penalty.consolidate({"weight": torch.tensor([[1.0, 3.0]])}, model)
    assert float(penalty(model).detach()) == 0.0
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[2.0, 0.0]]))
    assert float(penalty(model).detach()) == pytest.approx(0.5 * 4.0 * (1.0 * 1.0 + 3.0 * 4.0))
    penalty(model).backward()
    torch.testing.assert_close(model.weight.grad, 4.0 * torch.tensor([[1.0 * 1.0, 3.0 * -2.0]]))
    penalty.consolidate({"weight": torch.ones(1, 2)}, model)
    assert len(penalty.tasks) == 2
    online = EWCPenalty(lam=1.0, mode="online", decay=0.5)
    online.consolidate({"weight": torch.full((1, 2), 2.0)}, model)
    online.consolidate({"weight": torch.ones(1, 2)}, model)
    assert len(online.tasks) == 1
    torch.testing.assert_close(online.tasks[0][0]["weight"], torch.full((1, 2), 2.0))
    loss = ewc_loss(penalty, model)(model(torch.ones(3, 2)).repeat(1, 2), torch.zeros(3, dtype=torch.long))
    assert loss.requires_grad
    with pytest.raises(ValueError, match=r"lam must be a real number in \[0, inf\)"):
        EWCPenalty(lam=-1.0)
    with pytest.raises(ValueError, match="mode must be"):
        EWCPenalty(lam=1.0, mode="joint")
    with pytest.raises(ValueError, match="does not have"):
        penalty.consolidate({"bias": torch.ones(1)}, model)


def test_merging_two_trained_copies_is_pure_and_finite(trained):
    data, model, opt = trained
    other = copy.deepcopy(model)
    opt2 = train_classifier(other, data.X_train[:300], data.y_train[:300], epochs=1, batch_size=32, seed=1)
    sds = [dict(model.named_parameters()), dict(other.named_parameters())]
    imps = [read_squisher(opt, model, n_data=1347, batch_size=32), read_squisher(opt2, other, n_data=300,
                                                                                 batch_size=32)]
    merged = fisher_merge([{k: v.detach() for k, v in sd.items()} for sd in sds], imps)
    assert all(torch.isfinite(v).all() for v in merged.values())
    ugm = ugm_merge({k: v.detach() for k, v in sds[0].items()}, [{k: v.detach() for k, v in sds[1].items()}],
                    imps[1:], prior_precision=10.0)
    assert all(torch.isfinite(v).all() for v in ugm.values())


def test_bad_arguments_get_one_clear_error_naming_them():
    """Issue 19: each of these raised an AttributeError/other error or returned silently before."""
    from icml25.optim.squisher import apply_masks, ewc_loss, fisher_merge, task_arithmetic

    model = make_mlp([3, 4, 2], seed=0)
    X = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="X must contain only finite values"):
        fisher_diagonal(model, torch.full((6, 3), float("nan")))
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        fisher_diagonal("abc", X)
    with pytest.raises(ValueError, match="X must be a batch that model maps to logits"):
        fisher_diagonal(model, X[None])
    with pytest.raises(ValueError, match="y must be integer labels"):
        fisher_diagonal(model, X, torch.zeros(5, dtype=torch.long))
    opt = train_classifier(model, X, torch.zeros(6, dtype=torch.long), epochs=1, batch_size=3)
    with pytest.raises(TypeError, match="bias_correction must be True or False"):
        read_squisher(opt, model, n_data=6, batch_size=3, bias_correction="abc")
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        read_squisher(opt, "abc", n_data=6, batch_size=3)
    imp = uniform_importance(model)
    with pytest.raises(TypeError, match="a must be a mapping"):
        compare_importance(None, imp)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with pytest.raises(TypeError, match="state_dicts must be a non-empty sequence"):
        average_merge("abc")
    with pytest.raises(TypeError, match="exclude_param_names_regex must be a sequence"):
        fisher_merge([sd, sd], [imp, imp], exclude_param_names_regex="abc")
    with pytest.raises(TypeError, match="base must be a state dict"):
        task_arithmetic(None, [sd])
    with pytest.raises(ValueError, match="finetuned must be a non-empty sequence"):
        task_arithmetic(sd, [])
    with pytest.raises(TypeError, match="masks must be a mapping"):
        apply_masks(model, "abc")
    with pytest.raises(TypeError, match="penalty must be a EWCPenalty"):
        ewc_loss("abc", model)
