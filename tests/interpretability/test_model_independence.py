"""Unit tests of icml25.interpretability.model_independence (independence tests for models)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import chi2, kstest, spearmanr
from torch import nn

from icml25.interpretability import (
    GLUMLP,
    BlockTest,
    TinyGLU,
    distill_glu,
    fisher_combine,
    generalized_match_test,
    localize,
    match_rows,
    match_test,
    perm_test,
    permute_hidden,
    phi_cosine,
    phi_h,
    phi_jsd,
    phi_l2,
    phi_u,
    prune_hidden,
    reinit_block,
    rotate_residual,
    spearman_pvalue,
    weight_match_test,
)

TINY = np.finfo(np.float64).tiny


def randperm(n: int, seed: int) -> torch.Tensor:
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))


def orthogonal(d: int, seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64))
    return q


@pytest.fixture(scope="module")
def inputs() -> torch.Tensor:
    return torch.randn(300, 64, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def base() -> TinyGLU:
    return TinyGLU(seed=1)


@pytest.fixture(scope="module")
def disguised(base) -> nn.Module:
    """The base model with both blocks' hidden units permuted and the residual stream rotated."""
    m = permute_hidden(permute_hidden(base, 0, randperm(64, 1)), 1, randperm(64, 2))
    return rotate_residual(m, orthogonal(32, 3))


# ---------------------------------------------------------------- matching and p-values
@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_match_rows_recovers_a_hidden_permutation(metric):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 8))
    perm = rng.permutation(30)
    B = A[perm] + 0.01 * rng.normal(size=(30, 8))
    matched = match_rows(A, B, metric=metric)
    np.testing.assert_array_equal(perm[matched], np.arange(30))


def test_match_rows_rectangular_matches_the_smaller_side_into_the_larger():
    rng = np.random.default_rng(1)
    big = rng.normal(size=(20, 6))
    keep = np.array([3, 7, 11, 15, 19])
    np.testing.assert_array_equal(match_rows(big[keep], big, metric="l2"), keep)   # A smaller: indexes B
    np.testing.assert_array_equal(match_rows(big, big[keep], metric="l2"), keep)   # B smaller: indexes A


def test_match_rows_bad_input():
    with pytest.raises(ValueError, match="metric must be"):
        match_rows(np.ones((4, 2)), np.ones((4, 2)), metric="dot")
    with pytest.raises(ValueError, match="same number of columns"):
        match_rows(np.ones((4, 2)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="A must contain only finite values"):
        match_rows(np.full((4, 2), np.nan), np.ones((4, 2)))
    with pytest.raises(ValueError, match="A must be a 2-d array"):
        match_rows(np.ones(4), np.ones((4, 2)))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_spearman_pvalue_agrees_with_scipy(alternative):
    rng = np.random.default_rng(2)
    for _ in range(5):
        a = rng.permutation(60)
        b = np.where(rng.random(60) < 0.3, a, rng.permutation(60))  # may have ties: SciPy path
        c = rng.permutation(60)                                       # no ties: fast path
        for x, y in ((a, b), (a, c)):
            assert spearman_pvalue(x, y, alternative=alternative) == pytest.approx(
                spearmanr(x, y, alternative=alternative).pvalue, rel=1e-9)


def test_spearman_pvalue_of_identical_permutations_underflows_to_the_smallest_float():
    p = spearman_pvalue(np.arange(64), np.arange(64))
    assert p == TINY and p > 0
    assert spearman_pvalue(np.arange(64), np.arange(64)[::-1], alternative="greater") == pytest.approx(1.0)


def test_spearman_pvalue_bad_input():
    with pytest.raises(ValueError, match="same length"):
        spearman_pvalue(np.arange(5), np.arange(6))
    with pytest.raises(ValueError, match="at least 4"):
        spearman_pvalue(np.arange(3), np.arange(3))
    with pytest.raises(ValueError, match="alternative"):
        spearman_pvalue(np.arange(5), np.arange(5), alternative="up")


def test_fisher_combine_known_values():
    assert fisher_combine([0.3]) == pytest.approx(0.3)
    assert fisher_combine([0.1, 0.2]) == pytest.approx(chi2.sf(-2 * math.log(0.02), 4))
    assert fisher_combine([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert 0 < fisher_combine([0.0, 0.5]) <= 1e-300  # a p-value of 0 is clamped, not log(0)


def test_fisher_combine_bad_input():
    with pytest.raises(ValueError, match="at least 1 entry"):
        fisher_combine([])
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\]"):
        fisher_combine([0.5, 1.5])
    with pytest.raises(ValueError, match="pvalues must contain only finite values"):
        fisher_combine([float("nan")])


# ---------------------------------------------------------------- model and transformations
def test_tinyglu_is_seeded_and_validates():
    x = torch.randn(5, 64)
    torch.testing.assert_close(TinyGLU(seed=3)(x), TinyGLU(seed=3)(x))
    assert not torch.allclose(TinyGLU(seed=3)(x), TinyGLU(seed=4)(x))
    m = TinyGLU(h=[64, 48], seed=0)
    assert m.blocks[1].mlp.up_proj.out_features == 48
    with pytest.raises(ValueError, match=r"h must list one width per block \(2\), got 1"):
        TinyGLU(h=[64])
    with pytest.raises(ValueError, match="d must be an integer >= 1, got 0"):
        TinyGLU(d=0)
    with pytest.raises(TypeError, match=r"h\[1\] must be an integer >= 1"):
        TinyGLU(h=[64, 4.5])


def test_models_built_with_a_seed_leave_the_global_torch_rng_alone():
    state = torch.random.get_rng_state()
    a = TinyGLU(seed=3)
    GLUMLP(8, 16, seed=1)
    reinit_block(a, 0, seed=2)
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.testing.assert_close(TinyGLU(seed=np.random.default_rng(0)).embed.weight,
                               TinyGLU(seed=np.random.default_rng(0)).embed.weight)


def test_permute_hidden_keeps_the_function_and_moves_rows(base, inputs):
    perm = randperm(64, 5)
    child = permute_hidden(base, 1, perm)
    with torch.no_grad():
        torch.testing.assert_close(child(inputs), base(inputs), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(child.blocks[1].mlp.up_proj.weight, base.blocks[1].mlp.up_proj.weight[perm])
    torch.testing.assert_close(child.blocks[1].mlp.down_proj.weight, base.blocks[1].mlp.down_proj.weight[:, perm])
    torch.testing.assert_close(child.blocks[0].mlp.up_proj.weight, base.blocks[0].mlp.up_proj.weight)
    as_dict = permute_hidden(base.state_dict(), 1, perm)
    assert isinstance(as_dict, dict)
    torch.testing.assert_close(as_dict["blocks.1.mlp.gate_proj.weight"], child.blocks[1].mlp.gate_proj.weight)


def test_permute_hidden_bad_input(base):
    with pytest.raises(ValueError, match="permutation of range"):
        permute_hidden(base, 0, np.arange(10))
    with pytest.raises(ValueError, match="distinct indices"):
        permute_hidden(base, 0, np.zeros(64, dtype=int))
    with pytest.raises(ValueError, match=r"block must be an integer in \[0, 1\], got 2"):
        permute_hidden(base, 2, np.arange(64))
    with pytest.raises(TypeError, match="nn.Module or a state dict"):
        permute_hidden([1, 2], 0, np.arange(64))


def test_rotate_residual_keeps_the_function(base, disguised, inputs):
    with torch.no_grad():
        torch.testing.assert_close(disguised(inputs), base(inputs), atol=1e-5, rtol=1e-4)
    assert not torch.allclose(disguised.embed.weight, base.embed.weight)


def test_rotate_residual_bad_input(base):
    with pytest.raises(ValueError, match="orthogonal"):
        rotate_residual(base, 2 * torch.eye(32))
    with pytest.raises(ValueError, match="square"):
        rotate_residual(base, torch.ones(32, 31))
    with pytest.raises(ValueError, match="writes 32 features but Q is 16x16"):
        rotate_residual(base, orthogonal(16, 0))
    with pytest.raises(ValueError, match="no nn.Linear matches"):
        rotate_residual(base, orthogonal(32, 0), reads=("nothing",), writes=("nothing",))
    with pytest.raises(ValueError, match="not rotation-equivariant"):
        rotate_residual(nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4)), orthogonal(4, 0))


def test_prune_hidden_equals_zeroing_the_removed_units(base, inputs):
    keep = torch.arange(0, 64, 2)
    pruned = prune_hidden(base, 0, keep)
    assert pruned.blocks[0].mlp.gate_proj.weight.shape == (32, 32)
    assert pruned.blocks[0].mlp.down_proj.weight.shape == (32, 32)
    reference = reinit_block(base, 1, seed=0)  # any copy; overwrite the state below
    reference.load_state_dict(base.state_dict())
    with torch.no_grad():
        reference.blocks[0].mlp.down_proj.weight[:, 1::2] = 0
        torch.testing.assert_close(pruned(inputs), reference(inputs), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="at least 4"):
        prune_hidden(base, 0, [0, 1, 2])
    with pytest.raises(ValueError, match="distinct indices"):
        prune_hidden(base, 0, [0, 1, 2, 64])
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        prune_hidden(base.state_dict(), 0, [0, 1, 2, 3])


def test_reinit_block_changes_only_that_block(base):
    fresh = reinit_block(base, 1, seed=7)
    assert not torch.allclose(fresh.blocks[1].mlp.up_proj.weight, base.blocks[1].mlp.up_proj.weight)
    torch.testing.assert_close(fresh.blocks[0].mlp.up_proj.weight, base.blocks[0].mlp.up_proj.weight)
    torch.testing.assert_close(fresh.head.weight, base.head.weight)
    torch.testing.assert_close(reinit_block(base, 1, seed=7).blocks[1].mlp.gate_proj.weight,
                               fresh.blocks[1].mlp.gate_proj.weight)


# ---------------------------------------------------------------- constrained setting
def test_phi_u_detects_a_copy_and_is_evaded_by_permutation(base):
    same = phi_u(base, base)
    assert same.p_value == TINY and len(same.blocks) == 2 and all(b.rho == pytest.approx(1) for b in same.blocks)
    evaded = phi_u(base, permute_hidden(base, 0, randperm(64, 9)))
    assert evaded.blocks[0].p_value > 1e-3 and evaded.blocks[1].p_value == TINY


def test_phi_u_is_uniform_under_independence():
    models = [TinyGLU(seed=100 + k).state_dict() for k in range(12)]
    pvalues = [phi_u(a, b).p_value for a, b in itertools.combinations(models, 2)]
    assert kstest(pvalues, "uniform").pvalue > 0.01
    assert np.mean(np.asarray(pvalues) < 0.05) < 0.15


def test_weight_statistics_accept_modules_or_state_dicts(base):
    other = TinyGLU(seed=2)
    assert phi_u(base, other) == phi_u(base.state_dict(), other.state_dict())
    assert phi_l2(base, other) == pytest.approx(phi_l2(base.state_dict(), other))
    assert phi_l2(base, base) == 0.0
    assert phi_cosine(base, base) == pytest.approx(1.0)


def test_mismatched_architectures_get_a_clear_error(base):
    wider = TinyGLU(h=[64, 48], seed=0)
    for fn in (phi_u, phi_l2, phi_cosine):
        with pytest.raises(ValueError, match=r"'blocks\.1\.mlp\.gate_proj\.weight' has shape .* match_test"):
            fn(base, wider)
    with pytest.raises(ValueError, match="missing from model2"):
        phi_u(base, {k: v for k, v in base.state_dict().items() if k != "head.bias"})
    with pytest.raises(TypeError, match="nn.Module or a state dict"):
        phi_u(base, np.zeros(3))
    with pytest.raises(ValueError, match="no parameter named"):
        phi_u(nn.Linear(3, 3), nn.Linear(3, 3))
    broken = {k: v.clone() for k, v in base.state_dict().items()}
    broken["head.weight"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        phi_u(base, broken)


def test_perm_test_exact_pvalue_floor_ties_and_determinism(base):
    assert perm_test(base, base, phi_l2, T=99, seed=0).p_value == pytest.approx(0.01)
    res = perm_test(base, base, lambda a, b: 1.0, T=9 + 10, seed=0)  # invariant statistic: every copy ties
    assert res.p_value == 1.0 and res.null_values.shape == (19,)
    other = TinyGLU(seed=2).state_dict()
    stat = lambda a, b: phi_u(a, b).fisher_statistic  # noqa: E731
    r1 = perm_test(base.state_dict(), other, stat, T=39, seed=3)
    r2 = perm_test(base, TinyGLU(seed=2), stat, T=39, seed=3)
    assert r1.p_value == r2.p_value and np.array_equal(r1.null_values, r2.null_values)
    assert r1.p_value * 40 == pytest.approx(round(r1.p_value * 40))


def test_perm_test_is_exact_under_independence():
    models = [TinyGLU(seed=200 + k).state_dict() for k in range(10)]
    pvalues = [perm_test(a, b, phi_l2, T=19, seed=i).p_value
               for i, (a, b) in enumerate(itertools.combinations(models, 2))]
    assert kstest(pvalues, "uniform").pvalue > 0.01
    assert sum(p <= 0.05 for p in pvalues) <= 6  # 45 pairs, expected 2.25


def test_perm_test_custom_transform_and_bad_input(base):
    calls = []

    def flip(w, generator):
        calls.append(1)
        return {k: -v for k, v in w.items()}

    assert perm_test(base, base, phi_cosine, T=19, transform=flip).p_value == pytest.approx(0.05)
    assert len(calls) == 19
    with pytest.warns(UserWarning, match="cannot go below 0.25"):
        perm_test(base, base, phi_l2, T=3)
    with pytest.raises(ValueError, match="T must be an integer >= 1, got 0"):
        perm_test(base, base, phi_l2, T=0)
    with pytest.raises(TypeError, match="T must be an integer"):
        perm_test(base, base, phi_l2, T=9.5)
    with pytest.raises(ValueError, match="transform must be"):
        perm_test(base, base, phi_l2, transform="rotation")
    with pytest.raises(ValueError, match="NaN"):
        perm_test(base, base, lambda a, b: float("nan"), T=19)


def test_phi_h_sees_through_rotation_but_not_permutation(base, inputs):
    rotated = rotate_residual(base, orthogonal(32, 4))
    assert phi_h(base, rotated, inputs).p_value == TINY
    assert phi_u(base, rotated).p_value > 1e-3
    assert phi_h(base, TinyGLU(seed=2), inputs).p_value > 1e-3
    with pytest.raises(ValueError, match="needs equal widths"):
        phi_h(base, TinyGLU(h=[64, 48]), inputs)


def test_phi_jsd(base, disguised, inputs):
    assert phi_jsd(base, disguised, inputs) == pytest.approx(0.0, abs=1e-9)
    assert phi_jsd(base, TinyGLU(seed=2), inputs) < 0


def test_weight_match_test_robust_to_permutation_not_to_rotation(base):
    permuted = permute_hidden(permute_hidden(base, 0, randperm(64, 1)), 1, randperm(64, 2))
    assert weight_match_test(base, permuted).p_value == TINY
    assert weight_match_test(base, rotate_residual(permuted, orthogonal(32, 3))).p_value > 1e-3


# ---------------------------------------------------------------- unconstrained setting
def test_match_test_sees_through_permutation_and_rotation(base, disguised, inputs):
    res = match_test(base, disguised, inputs)
    assert res.method == "match" and res.p_value == TINY
    assert all(isinstance(b, BlockTest) and b.p_value < 1e-12 and b.truncated is None for b in res.blocks)
    assert phi_u(base, disguised).p_value > 1e-3  # the weight test is evaded


def test_match_test_under_independence_behaves_like_a_pvalue(inputs):
    models = [TinyGLU(seed=300 + k) for k in range(8)]
    pvalues = [p for a, b in itertools.combinations(models, 2) for p in match_test(a, b, inputs).block_pvalues]
    assert kstest(pvalues, "uniform").pvalue > 0.01
    assert np.mean(np.asarray(pvalues) < 0.05) <= 0.15


def test_match_test_different_widths_and_localisation(base, inputs):
    keep = randperm(64, 6)[:40]
    pruned = prune_hidden(base, 1, keep)
    res = match_test(base, pruned, inputs)
    assert res.blocks[1].n_units == 40 and res.blocks[1].truncated == "model1"
    assert max(res.block_pvalues) < 1e-6
    swapped = match_test(pruned, base, inputs)
    assert swapped.blocks[1].truncated == "model2"
    assert localize(base, pruned, inputs) == {0: 0, 1: 1}
    assert localize(base, reinit_block(base, 1, seed=11), inputs) == {0: 0}
    full = match_test(base, pruned, inputs, block_pairs="all")
    assert [(b.block1, b.block2) for b in full.blocks] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_match_test_drops_dead_units_with_a_warning(base, inputs):
    dead = {k: v.clone() for k, v in base.state_dict().items()}
    dead["blocks.0.mlp.gate_proj.weight"][:3] = 0
    model = TinyGLU(seed=0)
    model.load_state_dict(dead)
    with pytest.warns(UserWarning, match="dropping 3 dead hidden unit"):
        res = match_test(base, model, inputs)
    assert res.blocks[0].dropped == (0, 3) and res.blocks[0].n_units == 61 and res.blocks[0].p_value < 1e-12
    dead["blocks.0.mlp.up_proj.weight"][:62] = 0
    model.load_state_dict(dead)
    with pytest.raises(ValueError, match="only 2 hidden units"), pytest.warns(UserWarning):
        match_test(base, model, inputs)


def test_match_test_bad_input(base, inputs):
    with pytest.raises(ValueError, match="model2 cannot take inputs"):
        match_test(base, TinyGLU(d_in=32), inputs)
    with pytest.raises(TypeError, match="must be an nn.Module to run inputs"):
        match_test(base, base.state_dict(), inputs)
    with pytest.raises(ValueError, match="NaN"):
        match_test(base, base, torch.full((4, 64), float("nan")))
    with pytest.raises(ValueError, match="block_pairs must be"):
        match_test(base, base, inputs, block_pairs=[(0, 2)])
    with pytest.raises(ValueError, match="block_pairs must be"):
        match_test(base, base, inputs, block_pairs="upper")
    with pytest.raises(ValueError, match="metric must be"):
        match_test(base, base, inputs, metric="dot")
    with pytest.raises(ValueError, match="no parameter named"):
        match_test(nn.Linear(64, 3), nn.Linear(64, 3), inputs)
    with pytest.raises(ValueError, match="threshold"):
        localize(base, base, inputs, threshold=0)


def test_distill_glu_fits_the_block_and_generalized_match_runs(base):
    block = base.blocks[0].mlp
    probe = torch.randn(512, 32, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        target = block(probe)
        before = nn.functional.mse_loss(GLUMLP(32, 64, seed=0)(probe), target).item()
        student = distill_glu(block, 32, 64, steps=300, seed=0)
        after = nn.functional.mse_loss(student(probe), target).item()
    assert after < 0.5 * before
    res = generalized_match_test(block, block, 32, 16, steps=20, n_inputs=256, seed=0)
    assert isinstance(res, BlockTest) and 0 < res.p_value <= 1 and res.n_units == 16
    assert res == generalized_match_test(block, block, 32, 16, steps=20, n_inputs=256, seed=0)
    with pytest.raises(ValueError, match="steps must be an integer >= 1, got 0"):
        distill_glu(block, 32, 64, steps=0)
    with pytest.raises(ValueError, match="must map"):
        distill_glu(lambda x: x[:, :3], 32, 8, steps=1)


def test_forward_passes_check_the_input():
    """issue 19: a non-tensor raised AttributeError in RMSNorm and a deep linear() TypeError in the MLPs."""
    from icml25.interpretability import RMSNorm

    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        RMSNorm()("abc")
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 4\)"):
        GLUMLP(4, 8)(torch.zeros(2, 5))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        TinyGLU(d_in=8, d=4, h=8)(None)
    assert TinyGLU(d_in=8, d=4, h=8)(torch.zeros(2, 3, 8)).shape == (2, 3, 10)


def test_patterns_statistics_and_indices_are_checked():
    """issue 19: a wrong gate_pattern was silently ignored; a non-callable statistic, 2-d permutations and
    a missing up_pattern raised deep TypeError/KeyError."""
    a, b = TinyGLU(d_in=8, d=4, h=8, seed=1), TinyGLU(d_in=8, d=4, h=8, seed=2)
    with pytest.raises(ValueError, match="gate_pattern 'nope'"):
        perm_test(a, b, phi_l2, T=19, gate_pattern="nope")
    with pytest.raises(ValueError, match="gate_pattern 'nope'"):
        permute_hidden(a, 0, np.arange(8), gate_pattern="nope")
    with pytest.raises(TypeError, match="statistic must be callable"):
        perm_test(a, b, 3, T=19)
    with pytest.raises(ValueError, match="perm must be a 1-d array"):
        permute_hidden(a, 0, np.arange(8)[None])
    with pytest.raises(ValueError, match="up_pattern 'nope'"):
        weight_match_test(a, b, up_pattern="nope")
    with pytest.raises(ValueError, match="perm_a must be a 1-d array"):
        spearman_pvalue(np.arange(8)[None], np.arange(8))
    with pytest.raises(ValueError, match="reads must have at least 1 entries"):
        rotate_residual(a, np.eye(4), reads=())
    with pytest.raises(ValueError, match="inputs must hold at least one sample"):
        match_test(a, b, torch.zeros(0, 8))
