"""Unit tests of icml25.optim.generalized_smoothness_gd (ℓ-step, solvers, test functions, EllGD)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad

from icml25.optim import (
    AffineEll,
    CallableEll,
    ConstantEll,
    CoshSum,
    DoubleWell,
    LogBarrier,
    PowerEll,
    SquaredAffineEll,
    armijo_gd,
    as_ell,
    clipped_gd,
    constant_gd,
    ell_gd,
    ell_step,
    estimate_ell,
    fit_affine_envelope,
    grid_search,
    l0l1_gd,
    measure_curvature,
    normalized_gd,
    quadrature_step,
    theory_constant_step,
)

S_GRID = np.concatenate([[0.0], np.logspace(-10, 10, 41)])


def oracle_step(ell, s: float) -> float:
    """``∫_0^1 dv / ℓ(s + s v)`` by scipy's adaptive quadrature."""
    value, _ = quad(lambda v: 1.0 / float(ell(np.asarray(s + s * v))), 0.0, 1.0, epsabs=0, epsrel=1e-13, limit=200)
    return value


# ---------------------------------------------------------------- the ℓ-step


def test_constant_ell_gives_exactly_one_over_l():
    ell = ConstantEll(3.0)
    assert ell.step(7.5) == 1.0 / 3.0
    assert np.all(ell.step(S_GRID) == 1.0 / 3.0)
    assert ell_step(3.0, 10.0) == 1.0 / 3.0


@pytest.mark.parametrize("L0,L1", [(1.0, 1.0), (4.0, 2.0), (0.3, 50.0)])
def test_affine_closed_form_matches_quadrature_oracle(L0, L1):
    ell = AffineEll(L0, L1)
    steps = ell.step(S_GRID)
    for s, gamma in zip(S_GRID, steps, strict=True):
        assert gamma == pytest.approx(oracle_step(ell, s), rel=1e-10)
        assert ell.step(float(s)) == pytest.approx(gamma, rel=1e-14)


def test_affine_limits_and_zero_l1():
    ell = AffineEll(2.0, 3.0)
    assert ell.step(0.0) == 0.5
    s = 1e9
    assert ell.step(s) == pytest.approx(math.log(2.0) / (3.0 * s), rel=1e-8)
    tiny = 1e-12
    assert ell.step(tiny) == pytest.approx(1.0 / (2.0 + 1.5 * 3.0 * tiny), rel=1e-15)
    flat = AffineEll(2.0, 0.0)
    assert flat.step(123.0) == 0.5 and np.all(flat.step(S_GRID) == 0.5)


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (2.0, 0.5), (0.1, 10.0)])
def test_squared_affine_closed_form(a, b):
    ell = SquaredAffineEll(a, b)
    for s in S_GRID:
        assert ell.step(float(s)) == pytest.approx(oracle_step(ell, s), rel=1e-10)


@pytest.mark.parametrize("rho", [0.5, 2.0 / 3.0, 1.5, 2.0, 3.0])
def test_power_quadrature_matches_scipy_quad(rho):
    ell = PowerEll(4.0, 6.0, rho)
    steps = ell.step(S_GRID)
    for s, gamma in zip(S_GRID, steps, strict=True):
        assert gamma == pytest.approx(oracle_step(ell, s), rel=1e-10)


def test_power_special_exponents_use_closed_forms():
    assert PowerEll(2.0, 3.0, 1.0).step(5.0) == AffineEll(2.0, 3.0).step(5.0)
    assert PowerEll(2.0, 3.0, 0.0).step(5.0) == 1.0 / 5.0


def test_callable_ell_quadrature_and_validation():
    ell = CallableEll(lambda u: 1.0 + np.exp(u))
    for s in (0.0, 0.1, 1.0, 5.0):
        assert ell.step(s) == pytest.approx(oracle_step(ell, s), rel=1e-10)
    assert as_ell(lambda u: 2.0 + u).step(3.0) == pytest.approx(AffineEll(2.0, 1.0).step(3.0), rel=1e-13)
    scalar_only = CallableEll(lambda u: 2.0 + math.sqrt(u), vectorized=False)
    assert scalar_only.step(4.0) == pytest.approx(oracle_step(scalar_only, 4.0), rel=1e-10)
    with pytest.raises(ValueError, match="finite and > 0"):
        CallableEll(lambda u: u - 1.0).step(0.5)
    with pytest.raises(ValueError, match="finite and > 0"):
        CallableEll(lambda u: np.full_like(u, np.nan)).step(1.0)
    with pytest.raises(ValueError, match="non-decreasing"):
        CallableEll(lambda u: 10.0 - u).step(1.0)
    with pytest.raises(ValueError, match="vectorised"):
        CallableEll(lambda u: 1.0).step(np.ones(3))
    with pytest.raises(ValueError, match="vectorised"):
        quadrature_step(lambda u: 1.0, 2.0)


def test_constant_callable_recovers_one_over_l_to_rounding():
    assert CallableEll(lambda u: np.full_like(u, 4.0)).step(12.0) == pytest.approx(0.25, rel=1e-15)


def test_step_is_vectorised_and_shape_preserving():
    s = np.abs(np.random.default_rng(0).normal(size=(3, 4))) * 100
    for ell in (AffineEll(1, 2), PowerEll(1, 2, 0.7), SquaredAffineEll(1, 2), ConstantEll(2.0)):
        out = ell.step(s)
        assert out.shape == s.shape
        assert np.allclose(out.ravel(), [ell.step(float(v)) for v in s.ravel()], rtol=1e-14)


def test_step_is_positive_and_non_increasing_in_s():
    for ell in (AffineEll(1, 2), PowerEll(1, 2, 2.5), SquaredAffineEll(1, 2)):
        steps = ell.step(S_GRID)
        assert np.all(steps > 0) and np.all(np.diff(steps) <= 1e-15 * steps[1:])


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: AffineEll(0.0, 1.0), r"L0 must be a real number in \(0, inf\)"),
        (lambda: AffineEll(1.0, -1.0), r"L1 must be a real number in \[0, inf\)"),
        (lambda: PowerEll(1.0, 1.0, -0.5), r"rho must be a real number in \[0, inf\)"),
        (lambda: ConstantEll(float("nan")), "L must be a real number"),
        (lambda: SquaredAffineEll(0.0, 1.0), r"a must be a real number in \(0, inf\)"),
        (lambda: CallableEll(lambda u: u, n_nodes=1), "n_nodes"),
    ],
)
def test_bad_ell_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_ell_types_and_grad_norms():
    with pytest.raises(TypeError, match="real number"):
        AffineEll("1", 1.0)
    with pytest.raises(TypeError, match="callable"):
        CallableEll(3)
    with pytest.raises(TypeError, match="ell must be"):
        as_ell("affine")
    with pytest.raises(ValueError, match=r"gradient norms s must be a real number in \[0, inf\)"):
        AffineEll(1.0, 1.0).step(-1.0)
    with pytest.raises(ValueError, match="gradient norms s must contain only finite values"):
        PowerEll(1.0, 1.0, 0.5).step(np.array([1.0, np.nan]))


# ---------------------------------------------------------------- test functions


@pytest.mark.parametrize("fn", [CoshSum.random(10, 0), DoubleWell(10), LogBarrier.random(10, 0)])
def test_certified_ell_holds_on_random_points(fn):
    worst = fn.check_ell(10_000, seed=1)
    assert worst <= 1.0 + 1e-12
    assert fn.check_ell(10_000, seed=1) == worst


def test_check_ell_is_tight_enough_to_catch_a_wrong_ell():
    f1 = CoshSum.random(10, 0)
    assert f1.check_ell(10_000, seed=2) > 0.99
    wrong = DoubleWell(10)
    wrong.ell = PowerEll(1.0, 1.0, 2.0 / 3.0)
    assert wrong.check_ell(10_000, seed=2) > 1.0
    affine = DoubleWell(10)
    affine.ell = affine.affine_ell
    assert affine.check_ell(10_000, seed=2) <= 1.0


def test_function_values_gradients_and_minimisers():
    f1 = CoshSum(np.array([1.0, 2.0]))
    x = np.array([0.3, -0.2])
    eps = 1e-6
    num = [(f1.f(x + eps * e) - f1.f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    assert np.allclose(f1.grad(x), num, rtol=1e-7)
    assert f1.hess_norm(x) == pytest.approx(max(np.cosh(0.3), 4 * np.cosh(-0.4)))
    assert np.allclose(f1.hvp(x, np.ones(2)), [np.cosh(0.3), 4 * np.cosh(0.4)])
    f3 = LogBarrier(np.array([0.5, 2.0]))
    assert np.allclose(f3.grad(f3.x_star), 0.0) and f3.f(f3.x_star) == pytest.approx(f3.f_star)
    f2 = DoubleWell(3)
    assert np.allclose(f2.grad(f2.x_star), 0.0) and f2.f(f2.x_star) == f2.f_star


def test_test_function_bad_input():
    with pytest.raises(OverflowError, match="overflows"):
        CoshSum(np.array([2.0])).grad(np.array([400.0]))
    with pytest.raises(OverflowError, match="overflows"):
        CoshSum(np.array([2.0])).f(np.array([-400.0]))
    with pytest.raises(ValueError, match="outside the domain"):
        LogBarrier(np.array([1.0, 1.0])).f(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="shape"):
        DoubleWell(3).grad(np.ones(4))
    with pytest.raises(ValueError, match="> 0"):
        CoshSum(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="d must be"):
        DoubleWell(0)
    with pytest.raises(ValueError, match="n_points"):
        DoubleWell(2).check_ell(0)


def test_random_test_functions_are_seeded():
    assert np.array_equal(CoshSum.random(5, 3).a, CoshSum.random(5, 3).a)
    assert not np.array_equal(LogBarrier.random(5, 3).c, LogBarrier.random(5, 4).c)


# ---------------------------------------------------------------- solvers


@pytest.mark.parametrize(
    "fn,x0,tol",
    [
        (CoshSum.random(10, 0), 10.0 * np.ones(10), 1e-6),
        (DoubleWell(10), 5.0 * np.ones(10), 1e-6),
        (LogBarrier.random(10, 0), 1e-4 * np.ones(10), 1e-8),
    ],
)
def test_ell_gd_descent_lemma_holds_on_every_step(fn, x0, tol):
    res = ell_gd(fn.grad, x0, fn.ell, f=fn.f, tol=tol, max_iter=5000, domain=fn.domain)
    assert res.converged and not res.diverged
    assert res.descent_violations() == 0
    assert len(res.grad_norms) == res.n_iter + 1 == len(res.f_values) and len(res.steps) == res.n_iter
    assert np.allclose(res.x, fn.x_star, atol=1e-5)


def test_gradient_at_most_doubles_along_the_step():
    fn = CoshSum.random(10, 1)
    x = 6.0 * np.ones(10)
    for _ in range(30):
        g = fn.grad(x)
        s = np.linalg.norm(g)
        gamma = fn.ell.step(s)
        for t in np.linspace(0, gamma, 11):
            assert np.linalg.norm(fn.grad(x - t * g)) <= 2 * s * (1 + 1e-12)
        x = x - gamma * g


def test_zero_gradient_stops_at_once_and_step_is_one_over_ell0():
    res = ell_gd(lambda x: np.zeros_like(x), np.ones(3), AffineEll(2.0, 5.0), tol=0.0)
    assert res.converged and res.n_iter == 0 and res.steps.size == 0 and res.grad_norms[0] == 0.0
    assert AffineEll(2.0, 5.0).step(0.0) == 0.5


def test_ell_gd_with_constant_ell_is_plain_gd_on_a_quadratic():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(6, 6))
    H = M @ M.T + np.eye(6)
    L = float(np.linalg.eigvalsh(H).max())
    x0 = rng.normal(size=6)
    a = ell_gd(lambda x: H @ x, x0, ConstantEll(L), max_iter=200, tol=0.0)
    b = constant_gd(lambda x: H @ x, x0, 1.0 / L, max_iter=200, tol=0.0)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.grad_norms, b.grad_norms)


def test_leaving_the_domain_marks_diverged_and_keeps_a_valid_iterate():
    fn = LogBarrier(np.array([2.0, 2.0]))
    res = constant_gd(fn.grad, np.array([1.0, 1.0]), 5.0, domain=fn.domain, max_iter=10)
    assert res.diverged and not res.converged and res.n_iter == 0
    assert np.all(res.x > 0) and np.all(np.isfinite(res.x))


def test_non_finite_gradient_raises_with_the_iteration():
    calls = []

    def grad(x):
        calls.append(1)
        return x if len(calls) < 3 else np.full_like(x, np.nan)

    with pytest.raises(FloatingPointError, match="iteration 2"):
        ell_gd(grad, np.ones(2), 4.0, tol=0.0)


def test_huge_but_finite_gradient_norm_is_not_reported_as_non_finite():
    res = constant_gd(lambda x: np.full_like(x, 1e200), np.zeros(2), 1e-300, max_iter=1, tol=0.0)
    assert res.grad_norms[0] == pytest.approx(math.sqrt(2) * 1e200)


def test_baselines_step_rules():
    fn = CoshSum.random(10, 0)
    x0 = 3.0 * np.ones(10)
    L0, L1 = fn.ell.L0, fn.ell.L1
    clip = clipped_gd(fn.grad, x0, L0, L1, max_iter=5, tol=0.0)
    assert np.allclose(clip.steps, np.minimum(0.5 / L0, 0.5 / (L1 * clip.grad_norms[:5])))
    simple = l0l1_gd(fn.grad, x0, L0, L1, max_iter=5, tol=0.0)
    assert np.allclose(simple.steps, 1.0 / (L0 + L1 * simple.grad_norms[:5]))
    norm = normalized_gd(fn.grad, x0, 0.1, max_iter=5, tol=0.0)
    assert np.allclose(norm.steps * norm.grad_norms[:5], 0.1)
    s0 = np.linalg.norm(fn.grad(x0))
    assert theory_constant_step(fn.ell, s0) == pytest.approx(1.0 / (L0 + 2 * L1 * s0))
    for res in (clipped_gd(fn.grad, x0, L0, L1), l0l1_gd(fn.grad, x0, L0, L1)):
        assert res.converged


def test_armijo_counts_evaluations_and_satisfies_its_condition():
    fn = CoshSum.random(10, 0)
    res = armijo_gd(fn.grad, 10.0 * np.ones(10), fn.f, tol=1e-6)
    assert res.converged and res.n_f_evals >= res.n_iter + 1
    decrease = res.f_values[:-1] - res.f_values[1:]
    assert np.all(decrease >= 1e-4 * res.steps * res.grad_norms[:-1] ** 2 * (1 - 1e-12))
    barrier = LogBarrier.random(4, 0)
    res3 = armijo_gd(barrier.grad, 1e-4 * np.ones(4), barrier.f, domain=barrier.domain, tol=1e-8)
    assert res3.converged and np.all(res3.x > 0)


def test_grid_search_picks_the_fastest_converged_run():
    fn = LogBarrier.random(4, 0)
    x0 = np.ones(4)
    grid = grid_search(lambda e: constant_gd(fn.grad, x0, e, tol=1e-6, domain=fn.domain, max_iter=3000),
                       [1e-1, 1e-2, 1e-4])
    assert grid.best_value == 0.1 and grid.best.converged
    assert not grid.results[1e-4].converged
    none = grid_search(lambda e: constant_gd(fn.grad, x0, e, max_iter=2), [1e-3])
    assert none.best is None and none.best_value is None
    with pytest.raises(ValueError, match="must not be empty"):
        grid_search(lambda e: None, [])


def test_callback_can_stop_a_run():
    res = ell_gd(lambda x: x, np.ones(2), 4.0, tol=0.0, callback=lambda k, x, s: k == 3)
    assert res.n_iter == 3 and "callback" in res.message and not res.converged


@pytest.mark.parametrize(
    "kwargs,err,match",
    [
        ({"max_iter": -1}, ValueError, "max_iter"),
        ({"tol": -1.0}, ValueError, "tol"),
        ({"x0": np.array([np.nan, 1.0])}, ValueError, "x0"),
        ({"x0": np.array([])}, ValueError, "x0"),
        ({"domain": lambda x: False}, ValueError, "outside the domain"),
    ],
)
def test_solver_bad_input(kwargs, err, match):
    args = {"x0": np.ones(2)} | kwargs
    x0 = args.pop("x0")
    with pytest.raises(err, match=match):
        ell_gd(lambda x: x, x0, 1.0, **args)


def test_baseline_bad_input():
    with pytest.raises(ValueError, match=r"step must be a real number in \(0, inf\)"):
        constant_gd(lambda x: x, np.ones(2), 0.0)
    with pytest.raises(ValueError, match=r"c must be a real number in \(0, inf\)"):
        normalized_gd(lambda x: x, np.ones(2), -1.0)
    with pytest.raises(ValueError, match="L0"):
        clipped_gd(lambda x: x, np.ones(2), 0.0, 1.0)
    with pytest.raises(ValueError, match="shrink must be"):
        armijo_gd(lambda x: x, np.ones(2), lambda x: 0.5 * x @ x, shrink=1.5)
    with pytest.raises(ValueError, match="shape"):
        ell_gd(lambda x: np.ones(3), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="f values"):
        ell_gd(lambda x: x, np.ones(2), 1.0).descent_gaps()


# ---------------------------------------------------------------- estimate_ell


def test_estimate_ell_on_a_quadratic_recovers_l():
    H = np.diag([1.0, 3.0, 7.0])
    points = np.random.default_rng(0).normal(size=(20, 3))
    ell = estimate_ell(lambda x: H @ x, lambda x, v: H @ v, points, n_power_iter=100)
    assert abs(ell.L0 - 7.0) < 1e-3 and ell.L1 < 1e-6
    fd = estimate_ell(lambda x: H @ x, None, points, n_power_iter=100)
    assert abs(fd.L0 - ell.L0) < 1e-5 and abs(fd.L1 - ell.L1) < 1e-6


def test_estimate_ell_envelope_lies_above_measured_pairs_and_below_certificate():
    fn = CoshSum.random(10, 0)
    points = 6.0 * np.ones(10)[None, :] * np.linspace(0, 1, 30)[:, None]
    s, h = measure_curvature(fn.grad, fn.hvp, points, seed=0)
    ell = fit_affine_envelope(s, h)
    assert np.all(ell.L0 + ell.L1 * s >= h * (1 - 1e-9))
    # the certified ℓ is an envelope too, so the LP optimum is no higher at the median s
    w = float(np.median(s))
    assert ell.L0 + w * ell.L1 <= fn.ell.L0 + w * fn.ell.L1 + 1e-9
    again = estimate_ell(fn.grad, fn.hvp, points, seed=0)
    assert (again.L0, again.L1) == (ell.L0, ell.L1)


def test_estimate_ell_bad_input():
    with pytest.raises(ValueError, match="points must be a 2-d array"):
        estimate_ell(lambda x: x, None, np.ones(3))
    with pytest.raises(ValueError, match="n_power_iter"):
        measure_curvature(lambda x: x, None, np.ones((2, 2)), n_power_iter=0)
    with pytest.raises(ValueError, match="same length"):
        fit_affine_envelope(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="weight"):
        fit_affine_envelope(np.ones(3), np.ones(3), weight=-1.0)


# ---------------------------------------------------------------- PyTorch optimizer

torch = pytest.importorskip("torch")


def _torch_cosh(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.cosh(a * x).sum()


def test_ellgd_matches_numpy_ell_gd_in_float64():
    from icml25.optim import EllGD

    fn = CoshSum.random(6, 0)
    a = torch.tensor(fn.a)
    x = torch.nn.Parameter(torch.full((6,), 4.0, dtype=torch.float64))
    opt = EllGD([x], fn.ell)
    for _ in range(25):
        opt.zero_grad()
        _torch_cosh(a, x).backward()
        opt.step()
    ref = ell_gd(fn.grad, 4.0 * np.ones(6), fn.ell, max_iter=25, tol=0.0)
    assert np.allclose(x.detach().numpy(), ref.x, rtol=1e-12, atol=1e-14)
    assert opt.n_steps == 25 and opt.last_step == pytest.approx(ref.steps[-1], rel=1e-12)


def test_ellgd_uses_the_global_norm_and_supports_closure_and_groups():
    from icml25.optim import EllGD

    p1 = torch.nn.Parameter(torch.tensor([3.0, 0.0]))
    p2 = torch.nn.Parameter(torch.tensor([[4.0]]))
    frozen = torch.nn.Parameter(torch.tensor([1.0]))
    ell = AffineEll(1.0, 2.0)
    opt = EllGD([{"params": [p1]}, {"params": [p2, frozen], "ell": 1.0}], ell)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (p1**2).sum() + 0.5 * (p2**2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(12.5)
    gamma = ell.step(5.0)
    assert opt.last_grad_norm == pytest.approx(5.0)
    assert torch.allclose(p1.detach(), torch.tensor([3.0 - gamma * 3.0, 0.0]))
    assert torch.allclose(p2.detach(), torch.tensor([[0.0]]))  # the second group: ℓ = 1, step 1
    assert frozen.item() == 1.0


def test_scale_grad_by_ell_then_sgd_equals_ellgd():
    from icml25.optim import EllGD, scale_grad_by_ell_

    ell = PowerEll(1.0, 2.0, 1.5)
    torch.manual_seed(0)
    w0 = torch.randn(5, 3)
    xs = torch.randn(20, 5)
    out = []
    for use_helper in (False, True):
        w = torch.nn.Parameter(w0.clone())
        opt = torch.optim.SGD([w], lr=1.0) if use_helper else EllGD([w], ell)
        for _ in range(5):
            opt.zero_grad()
            (xs @ w).pow(4).mean().backward()
            if use_helper:
                scale_grad_by_ell_([w], ell)
            opt.step()
        out.append(w.detach().clone())
    assert torch.allclose(out[0], out[1], rtol=1e-6, atol=1e-7)
    assert out[0].dtype == torch.float32


def test_ellgd_maximize_and_bad_input():
    from icml25.optim import EllGD

    p = torch.nn.Parameter(torch.tensor([1.0]))
    opt = EllGD([p], 2.0, maximize=True)
    p.grad = torch.tensor([1.0])
    opt.step()
    assert p.item() == pytest.approx(1.5)
    p.grad = torch.tensor([float("nan")])
    with pytest.raises(FloatingPointError, match="step 1"):
        opt.step()
    emb = torch.nn.Embedding(4, 2, sparse=True)
    emb(torch.tensor([1])).sum().backward()
    with pytest.raises(NotImplementedError, match="sparse"):
        EllGD(emb.parameters(), 1.0).step()
    with pytest.raises(TypeError, match="ell must be"):
        EllGD([p], "fast")
    with pytest.raises(TypeError, match="maximize"):
        EllGD([p], 1.0, maximize=1)


def _ellgd_run(opt, w, xs, n_steps):
    for _ in range(n_steps):
        opt.zero_grad()
        (xs @ w).pow(4).mean().backward()
        opt.step()


def test_ellgd_state_dict_round_trips_through_torch_save_and_continues_identically(tmp_path):
    from icml25.optim import EllGD

    ell = AffineEll(1.0, 2.0)
    xs = torch.randn(20, 5, generator=torch.Generator().manual_seed(0))
    w = torch.nn.Parameter(torch.ones(5, 3))
    opt = EllGD([w], ell)
    _ellgd_run(opt, w, xs, 3)
    torch.save({"w": w.detach().clone(), "opt": opt.state_dict()}, tmp_path / "ckpt.pt")
    _ellgd_run(opt, w, xs, 4)

    ckpt = torch.load(tmp_path / "ckpt.pt")  # weights_only=True, the default
    w2 = torch.nn.Parameter(ckpt["w"])
    opt2 = EllGD([w2], ell)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.n_steps == 3
    _ellgd_run(opt2, w2, xs, 4)
    assert torch.equal(w2.detach(), w.detach())
    assert (opt2.n_steps, opt2.last_step, opt2.last_grad_norm) == (opt.n_steps, opt.last_step, opt.last_grad_norm)
    assert opt2.param_groups[0]["ell"] is ell  # ℓ is code: the loading optimizer's own ℓ is kept


def test_ellgd_honours_per_group_lr():
    from icml25.optim import EllGD

    a = torch.nn.Parameter(torch.tensor([3.0]))
    b = torch.nn.Parameter(torch.tensor([4.0]))
    frozen = torch.nn.Parameter(torch.tensor([5.0]))
    opt = EllGD([{"params": [a]}, {"params": [b], "lr": 0.5}, {"params": [frozen], "lr": 0.0}], 2.0)
    for p in (a, b, frozen):
        p.grad = torch.tensor([1.0])
    opt.step()
    assert a.item() == pytest.approx(2.5)  # default lr = 1: the ℓ-step 1/L itself
    assert b.item() == pytest.approx(3.75)
    assert frozen.item() == 5.0
    with pytest.raises(ValueError, match="lr must be"):
        EllGD([a], 2.0, lr=-1.0)
    with pytest.raises(TypeError, match="lr must be"):
        EllGD([{"params": [a], "lr": "fast"}], 2.0)


def test_bad_arguments_get_one_clear_error_naming_them():
    """Issue 19: each of these raised a deep/other error or returned silently before."""
    import torch

    from icml25.optim import EllGD, quadrature_step, scale_grad_by_ell_

    fn = CoshSum(np.array([0.5, 1.0, 2.0]))
    with pytest.raises(TypeError, match="grad_fn must be callable"):
        ell_gd(3, np.ones(3), fn.ell)
    with pytest.raises(ValueError, match="x0 must be a 1-d array"):
        ell_gd(fn.grad, np.ones((1, 3)), fn.ell)
    with pytest.raises(TypeError, match="domain must be callable"):
        constant_gd(fn.grad, np.ones(3), 0.1, domain=3)
    with pytest.raises(ValueError, match="max_backtracks must be an integer >= 1"):
        armijo_gd(fn.grad, np.ones(3), fn.f, max_backtracks=-1)
    with pytest.raises(ValueError, match="values must contain only finite values"):
        grid_search(lambda v: constant_gd(fn.grad, np.ones(3), v), [float("nan"), 0.1])
    with pytest.raises(TypeError, match="run must be callable"):
        grid_search(3, [0.1])
    with pytest.raises(ValueError, match="ell must be a real number"):
        as_ell(float("nan"))
    with pytest.raises(ValueError, match="grad_norm must be"):
        ell_step(1.0, np.array([-1.0]))
    with pytest.raises(TypeError, match="ell must be callable"):
        quadrature_step(3, 1.0)
    assert quadrature_step(lambda u: 1.0 + u, np.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match="x must contain only finite values"):
        fn.grad(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="x must have shape"):
        fn.domain(np.ones(2))
    with pytest.raises(TypeError, match="hvp_fn must be callable"):
        measure_curvature(fn.grad, 3, np.ones((1, 3)))
    with pytest.raises(ValueError, match="s must be a 1-d array"):
        fit_affine_envelope(np.ones((1, 2)), np.ones(2))
    with pytest.raises(ValueError, match="params must not be empty"):
        EllGD([], 1.0)
    with pytest.raises(TypeError, match="params must be an iterable"):
        EllGD(None, 1.0)
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="closure must be callable"):
        EllGD([p], 1.0).step(3)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        EllGD([p], 1.0).add_param_group(None)
    with pytest.raises(TypeError, match="state_dict must be a dict"):
        EllGD([p], 1.0).load_state_dict("abc")
    with pytest.raises(TypeError, match=r"parameters\[0\] must be a torch.Tensor"):
        scale_grad_by_ell_(["abc"], 1.0)
    assert scale_grad_by_ell_([], 2.0) == 0.5        # like clip_grad_norm_, an empty iterable is fine
