"""DiLQR: implicit gradients of iLQR against finite differences, the baselines, bad input."""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from icml25.control import (  # noqa: E402
    CartpoleDynamics,
    DiLQR,
    LinDx,
    PendulumDynamics,
    QuadCost,
    dynamics_lagrangian_hessian,
    implicit_cotangent,
    linearize,
    lqr_solve,
    pendulum_cost,
    pendulum_problem,
    sample_pendulum_states,
)
from icml25.control.lqr import LQRFunction, costate, riccati_factor  # noqa: E402

D = torch.float64
THETA = (15.0, 3.0, 0.5)  # the initial model of the official imitation: a swing-up with strong curvature


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: intra-op threads only add contention on a busy 2-core machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def problem(T=12, B=3, seed=1):
    x0 = sample_pendulum_states(B, seed)
    target = torch.randn(T, B, 1, generator=torch.Generator().manual_seed(seed), dtype=D)
    return x0, pendulum_cost(T, B), target


def solve(theta, x0, cost, T, mode="implicit", u_init=None, **kw):
    dyn = PendulumDynamics(*theta, dtype=D)
    opts = {"max_iter": 200, "eps": 1e-10, "verbose": -1, **kw}
    x, u, info = DiLQR(3, 1, T, grad_mode=mode, **opts)(x0, cost, dyn, u_init=u_init)
    return dyn, x, u, info


def rel(a, b):
    return float((a - b).norm() / b.norm())


# --------------------------------------------------------------------------- dynamics
def test_pendulum_jacobian_matches_autograd():
    dyn = PendulumDynamics(*THETA, dtype=D)
    x = sample_pendulum_states(5, 0) * torch.tensor([1.1, 0.9, 1.0], dtype=D)  # off the unit circle too
    u = torch.randn(5, 1, dtype=D)
    Fx, Fu = dyn.jacobian(x, u)
    for b in range(5):
        jx, ju = torch.autograd.functional.jacobian(lambda xx, uu: dyn(xx[None], uu[None])[0], (x[b], u[b]))
        assert torch.allclose(Fx[b], jx, atol=1e-12) and torch.allclose(Fu[b], ju, atol=1e-12)


def test_pendulum_step_matches_gymnasium():
    gym = pytest.importorskip("gymnasium")
    env = gym.make("Pendulum-v1", g=10.0)
    env.reset(seed=0)
    th, thdot = 0.7, -0.4
    env.unwrapped.state = [th, thdot]
    obs, *_ = env.step([1.3])
    x = torch.tensor([[math.cos(th), math.sin(th), thdot]], dtype=D)
    ours = PendulumDynamics(dtype=D)(x, torch.tensor([[1.3]], dtype=D))[0]
    assert torch.allclose(ours, torch.as_tensor(obs, dtype=D), atol=1e-5)


def test_lagrangian_hessian_matches_autograd_hessian():
    dyn = PendulumDynamics(*THETA, dtype=D)
    tau = torch.randn(2, 3, 4, dtype=D)
    lam = torch.randn(2, 3, 3, dtype=D)
    W = dynamics_lagrangian_hessian(dyn, tau, lam, 3)
    for t in range(2):
        for b in range(3):
            def s(z, t=t, b=b):
                return (lam[t, b] * dyn(z[None, :3], z[None, 3:])[0]).sum()

            assert torch.allclose(W[t, b], torch.autograd.functional.hessian(s, tau[t, b]), atol=1e-10)


# --------------------------------------------------------------------------- exactness
def test_implicit_gradient_matches_central_differences_float64():
    T = 12
    x0, cost, target = problem(T)
    dyn, _, u, info = solve(THETA, x0, cost, T)
    assert bool(info.converged.all())
    ((u - target) ** 2).sum().backward()
    fd = torch.zeros(3, dtype=D)
    h = 1e-5
    for i in range(3):
        th_p, th_m = list(THETA), list(THETA)
        th_p[i] += h
        th_m[i] -= h
        lp = ((solve(th_p, x0, cost, T, "none", u)[2] - target) ** 2).sum()
        lm = ((solve(th_m, x0, cost, T, "none", u)[2] - target) ** 2).sum()
        fd[i] = (lp - lm) / (2 * h)
    assert rel(dyn.params.grad, fd) < 1e-5
    dyn_d, _, u_d, _ = solve(THETA, x0, cost, T, "diffmpc")
    ((u_d - target) ** 2).sum().backward()
    err_diffmpc = rel(dyn_d.params.grad, fd)
    assert err_diffmpc > 1e-3  # DiffMPC ignores how the linearisation point moves with theta
    assert rel(dyn.params.grad, fd) <= 0.1 * err_diffmpc


def test_gradients_wrt_cost_and_initial_state_match_central_differences():
    T = 10
    x0, (C, c), target = problem(T, B=2)
    gen = torch.Generator().manual_seed(5)
    dC = torch.randn(C.shape, generator=gen, dtype=D)
    dC = 0.5 * (dC + dC.transpose(-1, -2))
    dc = torch.randn(c.shape, generator=gen, dtype=D)
    dx = torch.randn(x0.shape, generator=gen, dtype=D)
    Cg, cg, xg = C.clone().requires_grad_(), c.clone().requires_grad_(), x0.clone().requires_grad_()
    dyn = PendulumDynamics(*THETA, dtype=D)
    solver = DiLQR(3, 1, T, max_iter=200, eps=1e-10, verbose=-1)
    _, u, _ = solver(xg, QuadCost(Cg, cg), dyn)
    ((u - target) ** 2).sum().backward()
    h = 1e-6

    def loss(Cv, cv, xv):
        with torch.no_grad():
            return float(((solver(xv, QuadCost(Cv, cv), dyn, u_init=u.detach())[1] - target) ** 2).sum())

    fd_C = (loss(C + h * dC, c, x0) - loss(C - h * dC, c, x0)) / (2 * h)
    fd_c = (loss(C, c + h * dc, x0) - loss(C, c - h * dc, x0)) / (2 * h)
    fd_x = (loss(C, c, x0 + h * dx) - loss(C, c, x0 - h * dx)) / (2 * h)
    assert float((Cg.grad * dC).sum()) == pytest.approx(fd_C, rel=1e-5)
    assert float((cg.grad * dc).sum()) == pytest.approx(fd_c, rel=1e-5)
    assert float((xg.grad * dx).sum()) == pytest.approx(fd_x, rel=1e-5)


def test_unrolled_autodiff_converges_to_the_implicit_gradient():
    T = 12
    x0, cost, target = problem(T)
    dyn_i, _, u_i, _ = solve(THETA, x0, cost, T)
    ((u_i - target) ** 2).sum().backward()
    dyn_u, _, u_u, info = solve(THETA, x0, cost, T, "unroll", max_iter=60, eps=0.0, detach_unconverged=False)
    assert info.n_iter == 60
    ((u_u - target) ** 2).sum().backward()
    assert rel(dyn_u.params.grad, dyn_i.params.grad) < 1e-6


def test_fixed_point_backward_equals_dense():
    T = 12
    x0, cost, target = problem(T)
    grads = []
    for backward in ("dense", "fixed_point"):
        dyn, _, u, _ = solve(THETA, x0, cost, T, backward=backward)
        ((u - target) ** 2).sum().backward()
        grads.append(dyn.params.grad)
    assert rel(grads[1], grads[0]) < 1e-7


def test_adjoint_solves_the_autograd_fixed_point_equation():
    """w - J_tau' w = g with J_tau' computed by plain autograd through (F(tau), f(tau)) and the LQR."""
    T, n = 8, 3
    x0, (C, c), _ = problem(T, B=2)
    dyn, x, u, _ = solve(THETA, x0, QuadCost(C, c), T)
    tau = torch.cat((x, u), -1).detach()
    g = torch.randn(tau.shape, generator=torch.Generator().manual_seed(2), dtype=D)
    F, _ = linearize(dyn, tau, n)
    w = implicit_cotangent(g, dyn, tau, C, c, F, n)
    tau_var = tau.clone().requires_grad_()
    F_t, f_t = linearize(dyn, tau_var, n, create_graph=True)
    out = LQRFunction.apply(x0, C, c, F_t, f_t, tau, None, None)
    (jtw,) = torch.autograd.grad(out, tau_var, w)
    assert torch.allclose(w - jtw, g, atol=1e-9)


def test_box_bounds_pinned_controls_and_gradient():
    T, bound = 12, 2.0
    x0, cost, target = problem(T, B=3, seed=4)
    dyn, _, u, info = solve(THETA, x0, cost, T, u_lower=-bound, u_upper=bound)
    pinned = (u.abs() - bound).abs() < 1e-8
    assert pinned.any() and (~pinned).any() and bool(info.converged.all())
    ((u - target) ** 2).sum().backward()
    fd = torch.zeros(3, dtype=D)
    h = 1e-6
    for i in range(3):
        th_p, th_m = list(THETA), list(THETA)
        th_p[i] += h
        th_m[i] -= h
        lp = ((solve(th_p, x0, cost, T, "none", u, u_lower=-bound, u_upper=bound)[2] - target) ** 2).sum()
        lm = ((solve(th_m, x0, cost, T, "none", u, u_lower=-bound, u_upper=bound)[2] - target) ** 2).sum()
        fd[i] = (lp - lm) / (2 * h)
    assert rel(dyn.params.grad, fd) < 1e-5
    dyn2, _, u2, _ = solve(THETA, x0, cost, T, u_lower=-bound, u_upper=bound)
    u2[pinned].sum().backward()
    assert torch.all(dyn2.params.grad == 0)  # controls at a bound have zero sensitivity


def test_cartpole_autograd_linearisation_gradient():
    T, B = 10, 2
    x0 = torch.tensor([[0.0, 0.0, math.cos(2.8), math.sin(2.8), 0.0], [0.1, 0.0, math.cos(-2.5), math.sin(-2.5), 0.3]],
                      dtype=D)
    q = torch.tensor([0.1, 0.1, 1.0, 1.0, 0.1, 1e-3], dtype=D)
    goal = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0], dtype=D)
    cost = QuadCost(torch.diag(q).expand(T, B, 6, 6), torch.cat((-q[:5].sqrt() * goal, q.new_zeros(1))).expand(T, B, 6))
    theta = (9.8, 3.0, 0.1, 1.0)
    target = torch.randn(T, B, 1, generator=torch.Generator().manual_seed(0), dtype=D)

    def run(th, mode="implicit", u_init=None):
        dyn = CartpoleDynamics(*th, dtype=D)
        _, u, info = DiLQR(5, 1, T, max_iter=300, eps=1e-10, grad_mode=mode, verbose=-1)(x0, cost, dyn, u_init)
        return dyn, u, info

    dyn, u, info = run(theta)
    assert bool(info.converged.all())
    ((u - target) ** 2).sum().backward()
    h = 1e-6
    fd = torch.zeros(4, dtype=D)
    for i in range(4):
        tp, tm = list(theta), list(theta)
        tp[i] += h
        tm[i] -= h
        lp, lm = (((run(th, "none", u)[1] - target) ** 2).sum() for th in (tp, tm))
        fd[i] = (lp - lm) / (2 * h)
    assert rel(dyn.params.grad, fd) < 1e-4


# --------------------------------------------------------------------------- other inputs
def test_linear_dynamics_reduce_to_the_lqr_solve():
    T, B, n, m = 6, 2, 3, 2
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(T, B, n + m, n + m, generator=gen, dtype=D)
    C = (A @ A.transpose(-1, -2) + torch.eye(n + m, dtype=D)).requires_grad_()
    c = torch.randn(T, B, n + m, generator=gen, dtype=D)
    F = (0.4 * torch.randn(T - 1, B, n, n + m, generator=gen, dtype=D)).requires_grad_()
    x0 = torch.randn(B, n, generator=gen, dtype=D)
    x1, u1, info = DiLQR(n, m, T)(x0, QuadCost(C, c), LinDx(F, None))
    assert info.n_iter <= 2
    assert torch.equal(DiLQR(n, m, T)(x0, (C, c), (F, torch.zeros(T - 1, B, n, dtype=D)))[1], u1)  # plain tuples
    x2, u2 = lqr_solve(x0, C, c, F)
    assert torch.allclose(u1, u2, atol=1e-10)
    g1 = torch.autograd.grad(u1.square().sum(), (C, F))
    g2 = torch.autograd.grad(u2.square().sum(), (C, F))
    assert all(torch.allclose(a, b, atol=1e-8) for a, b in zip(g1, g2, strict=True))


def test_callable_cost_matches_quadcost_and_learns_its_parameters():
    T = 10
    x0, (C, c), target = problem(T, B=2)
    weights = torch.tensor([1.0, 1.0, 0.1, 1e-3], dtype=D, requires_grad=True)
    goal = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=D)

    def cost_fn(tau):
        return 0.5 * (weights * tau**2).sum(-1) - (weights.sqrt() * goal * tau).sum(-1)

    dyn = PendulumDynamics(*THETA, dtype=D)
    solver = DiLQR(3, 1, T, max_iter=200, eps=1e-10, verbose=-1)
    _, u_call, _ = solver(x0, cost_fn, dyn)
    Cw = torch.diag(weights).expand(T, 2, 4, 4)
    cw = (-weights.sqrt() * goal).expand(T, 2, 4)
    _, u_quad, _ = solver(x0, QuadCost(Cw, cw), dyn)
    assert torch.allclose(u_call, u_quad, atol=1e-9)
    (g_call,) = torch.autograd.grad(((u_call - target) ** 2).sum(), weights)
    (g_quad,) = torch.autograd.grad(((u_quad - target) ** 2).sum(), weights)
    assert torch.allclose(g_call, g_quad, rtol=1e-7, atol=1e-9)


def test_horizon_one_gives_cost_gradients_only():
    x0, (C, c), _ = problem(1, B=2)
    cg = c.clone().requires_grad_()
    dyn = PendulumDynamics(dtype=D)
    x, u, info = DiLQR(3, 1, 1)(x0, QuadCost(C, cg), dyn)
    assert x.shape == (1, 2, 3) and bool(info.converged.all())
    u.sum().backward()
    assert cg.grad is not None and dyn.params.grad is None


def test_batch_of_one_and_non_contiguous_inputs():
    T = 10
    x0, (C, c), _ = problem(T, B=3)
    solver = DiLQR(3, 1, T, max_iter=100, eps=1e-9, verbose=-1)
    dyn = PendulumDynamics(dtype=D)
    _, u_all, _ = solver(x0, QuadCost(C, c), dyn)
    _, u_one, _ = solver(x0[1:2], QuadCost(C[:, 1:2], c[:, 1:2]), dyn)
    assert torch.allclose(u_one[:, 0], u_all[:, 1], atol=1e-8)
    x_nc = x0.T.contiguous().T
    C_nc = C.transpose(0, 1).contiguous().transpose(0, 1)
    assert not x_nc.is_contiguous() and not C_nc.is_contiguous()
    _, u_nc, _ = solver(x_nc, QuadCost(C_nc, c), dyn)
    assert torch.allclose(u_nc, u_all)


def test_same_inputs_same_numbers_and_float32():
    assert torch.equal(sample_pendulum_states(4, 7), sample_pendulum_states(4, 7))
    T = 10
    x0, cost, target = problem(T, B=2)
    g = []
    for _ in range(2):
        dyn, _, u, _ = solve(THETA, x0, cost, T, max_iter=50, eps=1e-7)
        ((u - target) ** 2).sum().backward()
        g.append(dyn.params.grad)
    assert torch.equal(g[0], g[1])
    dyn32 = PendulumDynamics()
    x, u, info = DiLQR(3, 1, T, eps=1e-4)(x0.float(), QuadCost(cost.C.float(), cost.c.float()), dyn32)
    assert u.dtype == torch.float32 and bool(info.converged.all())
    u.sum().backward()
    assert dyn32.params.grad.dtype == torch.float32


def test_grad_mode_none_builds_no_graph():
    T = 8
    x0, cost, _ = problem(T, B=2)
    _, x, u, _ = solve(THETA, x0, cost, T, "none")
    assert not u.requires_grad and not x.requires_grad


def count_nodes(t):
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    return len(seen)


def test_implicit_graph_does_not_grow_with_iterations_but_unroll_does():
    T = 8
    x0, cost, _ = problem(T, B=2)
    sizes = {}
    for mode in ("implicit", "unroll"):
        for K in (3, 12):
            _, _, u, _ = solve(THETA, x0, cost, T, mode, max_iter=K, eps=0.0, detach_unconverged=False)
            sizes[mode, K] = count_nodes(u)
    assert sizes["implicit", 3] == sizes["implicit", 12]
    assert sizes["unroll", 12] > 3 * sizes["unroll", 3]


def test_pendulum_problem_is_seeded():
    x0, (C, c), target = pendulum_problem(5, 3, seed=4)
    assert x0.shape == (3, 3) and C.shape == (5, 3, 4, 4) and target.shape == (5, 3, 1)
    assert torch.equal(pendulum_problem(5, 3, seed=4)[2], target)
    assert not torch.equal(pendulum_problem(5, 3, seed=5)[2], target)


# --------------------------------------------------------------------------- unconverged and ill-posed
def test_unconverged_examples_warn_detach_or_raise():
    T = 10
    x0, cost, target = problem(T, B=2)
    with pytest.warns(RuntimeWarning, match="did not converge to a fixed point"):
        dyn, _, u, info = solve(THETA, x0, cost, T, max_iter=1, eps=1e-12, verbose=0)
    assert not bool(info.converged.any()) and "detached" in info.reason[0]
    assert not u.requires_grad  # every example detached: no wrong implicit gradient is returned
    u_star = solve(THETA, x0, cost, T, "none")[2]
    warm = torch.stack((u_star[:, 0], torch.zeros_like(u_star[:, 1])), 1)  # example 0 starts at its solution
    with pytest.warns(RuntimeWarning, match="1 of 2 examples did not converge"):
        dyn, _, u, info = solve(THETA, x0, cost, T, u_init=warm, max_iter=1, eps=1e-6, verbose=0)
    assert info.converged.tolist() == [True, False] and info.reason[0] == "converged"
    (g_bad,) = torch.autograd.grad(u[:, 1].sum(), dyn.params, allow_unused=True)
    assert torch.all(g_bad == 0)
    with pytest.raises(RuntimeError, match="did not converge"):
        solve(THETA, x0, cost, T, max_iter=1, eps=1e-12, exit_unconverged=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, _, u, info = solve(THETA, x0, cost, T, "unroll", max_iter=1, eps=1e-12, verbose=0)
    assert u.requires_grad  # the unrolled gradient is exact for the unrolled computation


def test_fixed_point_fallback_and_ill_conditioning_warnings():
    T = 8
    x0, cost, target = problem(T, B=2)
    dyn, _, u, _ = solve(THETA, x0, cost, T)
    ((u - target) ** 2).sum().backward()
    ref = dyn.params.grad
    with pytest.warns(RuntimeWarning, match="fixed-point backward did not converge"):
        dyn, _, u, _ = solve(THETA, x0, cost, T, backward="fixed_point", fp_max_iter=1)
        ((u - target) ** 2).sum().backward()
    assert torch.allclose(dyn.params.grad, ref)
    with pytest.warns(RuntimeWarning, match="ill-conditioned"):
        dyn, _, u, _ = solve(THETA, x0, cost, T, cond_max=1.0)
        ((u - target) ** 2).sum().backward()
    assert torch.allclose(dyn.params.grad, ref)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"grad_mode": "autodiff"}, "grad_mode must be one of"),
        ({"backward": "sparse"}, "backward must be one of"),
        ({"T": 0}, "T must be an integer >= 1"),
        ({"eps": -1.0}, r"eps must be a real number in \[0, inf\)"),
        ({"verbose": 3}, "verbose must be one of"),
        ({"linesearch_decay": 1.5}, "linesearch_decay"),
        ({"u_lower": -1.0}, "give both u_lower and u_upper"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DiLQR(**{"n_state": 3, "n_ctrl": 1, "T": 5, **kwargs})


def test_wrongly_typed_constructor_arguments():
    with pytest.raises(TypeError, match="max_iter must be an integer >= 1"):
        DiLQR(3, 1, 5, max_iter=10.0)
    with pytest.raises(TypeError, match="exit_unconverged must be True or False"):
        DiLQR(3, 1, 5, exit_unconverged=1)
    with pytest.raises(TypeError, match="x_init must be a torch tensor"):
        DiLQR(3, 1, 5)([[1.0, 0.0, 0.0]], pendulum_problem(5, 1)[1], PendulumDynamics(dtype=D))


def test_bad_forward_input():
    T = 6
    x0, (C, c), _ = problem(T, B=2)
    dyn = PendulumDynamics(dtype=D)
    solver = DiLQR(3, 1, T)
    with pytest.raises(ValueError, match=r"x_init must have shape \[batch, 3\]"):
        solver(x0[:, :2], QuadCost(C, c), dyn)
    with pytest.raises(ValueError, match="x_init must contain only finite values"):
        solver(x0 * float("nan"), QuadCost(C, c), dyn)
    with pytest.raises(ValueError, match="QuadCost.C must have shape"):
        solver(x0, QuadCost(C[:, :, :3], c), dyn)
    with pytest.raises(ValueError, match="QuadCost.c must have shape"):
        solver(x0, QuadCost(C, c[:-1]), dyn)
    with pytest.raises(TypeError, match="dtype"):
        solver(x0, QuadCost(C.float(), c), dyn)
    no_ctrl_penalty = C.clone()
    no_ctrl_penalty[..., 3, 3] = 0.0
    with pytest.raises(ValueError, match="C_uu of the cost is not positive definite"):
        solver(x0, QuadCost(no_ctrl_penalty, c), dyn)
    with pytest.warns(RuntimeWarning, match="solving the regularised problem"):
        _, u, info = DiLQR(3, 1, T, u_reg=1e-3)(x0, QuadCost(no_ctrl_penalty, c), dyn)
    assert bool(info.converged.all())
    with pytest.raises(ValueError, match="u_init must have shape"):
        solver(x0, QuadCost(C, c), dyn, u_init=torch.zeros(T + 1, 2, 1, dtype=D))
    with pytest.raises(ValueError, match="must return"):
        solver(x0, QuadCost(C, c), lambda x, u: x[:, :2])
    with pytest.raises(TypeError, match="cost must be a QuadCost"):
        solver(x0, "quadratic", dyn)
    bad = PendulumDynamics(dtype=D)
    with torch.no_grad():
        bad.params[0] = float("inf")
    with pytest.raises(ValueError, match="dynamics parameter 'params' must contain only finite values"):
        solver(x0, QuadCost(C, c), bad)
    with pytest.raises(ValueError, match=r"g must be a real number in \(0, inf\)"):
        PendulumDynamics(g=-1.0)


def test_riccati_and_costate_with_a_single_time_step():
    C = torch.eye(4, dtype=D).expand(1, 2, 4, 4)
    F = torch.zeros(0, 2, 3, 4, dtype=D)
    factor = riccati_factor(C, F, 3)
    assert len(factor.K) == 1
    lam = costate(C, torch.zeros(1, 2, 4, 1, dtype=D), F, torch.ones(1, 2, 4, 1, dtype=D), 3)
    assert lam.shape == (1, 2, 3, 1)
