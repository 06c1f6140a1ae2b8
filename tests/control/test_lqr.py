"""Batched LQR (Amos et al. backward), box QP and the iLQR loop of icml25.control.lqr."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from icml25.control.lqr import box_qp, expand_bounds, lqr_solve  # noqa: E402

D = torch.float64


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: intra-op threads only add contention on a busy 2-core machine."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def random_lqr(T=5, B=2, n=3, m=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    N = n + m
    A = torch.randn(T, B, N, N, generator=gen, dtype=D)
    C = A @ A.transpose(-1, -2) + 0.5 * torch.eye(N, dtype=D)
    c = torch.randn(T, B, N, generator=gen, dtype=D)
    F = 0.5 * torch.randn(T - 1, B, n, N, generator=gen, dtype=D)
    f = torch.randn(T - 1, B, n, generator=gen, dtype=D)
    x0 = torch.randn(B, n, generator=gen, dtype=D)
    return x0, C, c, F, f


def kkt_solution(x0, C, c, F, f):
    """Dense KKT solve of the same LQR, one example at a time (the known answer)."""
    T, B, N, _ = C.shape
    n = x0.shape[1]
    out = []
    for b in range(B):
        nv = T * N
        H = torch.block_diag(*[C[t, b] for t in range(T)])
        rows, rhs = [], []
        E0 = torch.zeros(n, nv, dtype=D)
        E0[:, :n] = torch.eye(n, dtype=D)
        rows.append(E0)
        rhs.append(x0[b])
        for t in range(T - 1):
            A = torch.zeros(n, nv, dtype=D)
            A[:, t * N:(t + 1) * N] = F[t, b]
            A[:, (t + 1) * N:(t + 1) * N + n] -= torch.eye(n, dtype=D)
            rows.append(A)
            rhs.append(-f[t, b])
        A = torch.cat(rows)
        K = torch.cat((torch.cat((H, A.T), 1), torch.cat((A, torch.zeros(A.shape[0], A.shape[0], dtype=D)), 1)))
        sol = torch.linalg.solve(K, torch.cat((-c[:, b].reshape(-1), torch.cat(rhs))))
        out.append(sol[:nv].reshape(T, N))
    return torch.stack(out, 1)


def test_lqr_matches_dense_kkt_solve():
    x0, C, c, F, f = random_lqr()
    x, u = lqr_solve(x0, C, c, F, f)
    tau = torch.cat((x, u), -1)
    assert torch.allclose(tau, kkt_solution(x0, C, c, F, f), atol=1e-10)
    assert torch.allclose(x[0], x0)


def test_lqr_backward_passes_gradcheck():
    x0, C, c, F, f = (t.requires_grad_() for t in random_lqr(T=4))
    weights = torch.arange(4, dtype=D)[:, None, None]

    def fn(x0, C, c, F, f):
        x, u = lqr_solve(x0, 0.5 * (C + C.transpose(-1, -2)), c, F, f)
        return (x**3).sum() + (weights * u**2).sum()

    assert torch.autograd.gradcheck(fn, (x0, C, c, F, f))


def test_box_constrained_lqr_gradcheck_and_pinned_controls():
    x0, C, c, F, f = (t.requires_grad_() for t in random_lqr(T=3, B=2, n=2, m=2, seed=1))

    def fn(x0, C, c, F, f):
        x, u = lqr_solve(x0, 0.5 * (C + C.transpose(-1, -2)), c, F, f, u_lower=-0.3, u_upper=0.3)
        return (x**3).sum() + (u**2).sum() + u.sum()

    x, u = lqr_solve(x0, C, c, F, f, u_lower=-0.3, u_upper=0.3)
    pinned = (u.abs() - 0.3).abs() < 1e-9
    assert pinned.any() and (~pinned).any()
    assert torch.autograd.gradcheck(fn, (x0, C, c, F, f))
    (gc,) = torch.autograd.grad(u.sum(), c)
    # a pinned control does not move when its own linear cost changes slightly
    assert torch.all(gc[..., 2:][pinned] == 0)


def test_broadcast_shapes_and_horizon_long_f_matrices():
    x0, C, c, F, f = random_lqr(T=4, B=3)
    C1, c1, F1, f1 = C[0, 0], c[0, 0], F[0, 0], f[0, 0]
    x_a, u_a = lqr_solve(x0, C1.expand(4, -1, -1), c1, F1, f1)  # C fixes the horizon: [T,N,N] or [T,B,N,N]
    x_b, u_b = lqr_solve(x0, C1.expand(4, 3, -1, -1), c1.expand(4, 3, -1), F1.expand(3, 3, -1, -1), f1.expand(3, 3, -1))
    assert torch.allclose(u_a, u_b) and torch.allclose(x_a, x_b)
    # mpc.pytorch examples often pass T copies of F: the last one is unused
    x_c, u_c = lqr_solve(x0, C, c, torch.cat((F, F[:1])), torch.cat((f, f[:1])))
    x_d, u_d = lqr_solve(x0, C, c, F, f)
    assert torch.allclose(u_c, u_d)


def test_horizon_one_is_a_static_quadratic():
    x0, C, c, F, f = random_lqr(T=1, B=2)
    x, u = lqr_solve(x0, C, c, F[:0], f[:0])
    N = C.shape[-1]
    expected = -torch.linalg.solve(C[0][:, 3:, 3:], (C[0][:, 3:, :3] @ x0.unsqueeze(-1)).squeeze(-1) + c[0][:, 3:])
    assert x.shape == (1, 2, 3) and u.shape == (1, 2, N - 3)
    assert torch.allclose(u[0], expected)


def _bounded_problem():
    T, B, n, m = 4, 2, 3, 2
    C = torch.eye(n + m, dtype=D).expand(T, n + m, n + m).clone()
    F = torch.cat([torch.eye(n, dtype=D), torch.ones(n, m, dtype=D)], 1).expand(T - 1, n, n + m).clone()
    return torch.ones(B, n, dtype=D), C, torch.zeros(T, n + m, dtype=D), F


@pytest.mark.parametrize("bounds, match", [
    ((float("nan"), 1.0), "u_lower must be a real number, got nan"),
    ((-1.0, float("nan")), "u_upper must be a real number, got nan"),
    ((torch.tensor([-1.0, float("nan")], dtype=D), 1.0), "u_lower must not contain NaN"),
    ((1.0, -1.0), "u_lower must not exceed u_upper"),
])
def test_lqr_solve_rejects_nan_bounds_at_once(bounds, match):
    """issue 19: a NaN bound passed the lo > hi check (false for NaN); the iterations then ran long to NaN."""
    x0, C, c, F = _bounded_problem()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=match):
        lqr_solve(x0, C, c, F, None, *bounds)
    assert time.perf_counter() - start < 1.0


def test_box_qp_validates_input_and_reports_convergence_within_its_cap():
    gen = torch.Generator().manual_seed(4)
    A = torch.randn(6, 3, 3, generator=gen, dtype=D)
    H = A @ A.transpose(-1, -2) + 0.1 * torch.eye(3, dtype=D)
    q = 3 * torch.randn(6, 3, generator=gen, dtype=D)
    lo, hi = -torch.ones(6, 3, dtype=D), torch.ones(6, 3, dtype=D)
    x, free, ok = box_qp(H, q, lo, hi, return_converged=True)
    assert ok.shape == (6,) and bool(ok.all())
    assert torch.equal(x, box_qp(H, q, lo, hi)[0])
    x1, _, ok1 = box_qp(H, q, lo, hi, max_iter=1, return_converged=True)  # the cap is honoured and reported
    assert not bool(ok1.all()) and bool(torch.all((x1 >= lo) & (x1 <= hi)))
    nan = torch.full_like(lo, float("nan"))
    for kwargs, match in [
        ({"lower": nan}, "lower must not contain NaN"), ({"upper": nan}, "upper must not contain NaN"),
        ({"lower": hi, "upper": lo}, "lower must not exceed upper"), ({"q": q * float("nan")}, "q must contain"),
        ({"H": H * float("inf")}, "H must contain"), ({"x0": nan}, "x0 must contain"),
        ({"lower": lo[:, :2]}, "lower must have the shape"), ({"q": q[0]}, "H must be"),
        ({"max_iter": 0}, "max_iter"),
    ]:
        args = {"H": H, "q": q, "lower": lo, "upper": hi, **kwargs}
        with pytest.raises(ValueError, match=match):
            box_qp(**args)
    with pytest.raises(TypeError, match="lower must be a torch tensor"):
        box_qp(H, q, -1.0, hi)


def test_box_qp_satisfies_kkt_conditions():
    gen = torch.Generator().manual_seed(3)
    A = torch.randn(20, 4, 4, generator=gen, dtype=D)
    H = A @ A.transpose(-1, -2) + 0.1 * torch.eye(4, dtype=D)
    q = 3 * torch.randn(20, 4, generator=gen, dtype=D)
    lo, hi = -torch.ones(20, 4, dtype=D), torch.ones(20, 4, dtype=D)
    x, free = box_qp(H, q, lo, hi)
    grad = (H @ x.unsqueeze(-1)).squeeze(-1) + q
    assert torch.all(x >= lo - 1e-12) and torch.all(x <= hi + 1e-12)
    assert grad[free].abs().max() < 1e-8
    at_lo, at_hi = (x - lo).abs() < 1e-10, (x - hi).abs() < 1e-10
    assert torch.all(grad[at_lo & ~free] >= -1e-8) and torch.all(grad[at_hi & ~free] <= 1e-8)
    assert (~free).any()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda a: {**a, "x_init": a["x_init"][0]}, r"x_init must have shape \[batch, n_state\]"),
        (lambda a: {**a, "c": a["c"][:, :, :4]}, "QuadCost.c must have shape"),
        (lambda a: {**a, "C": a["C"][..., :4]}, "QuadCost.C must have shape"),
        (lambda a: {**a, "F": a["F"][:, :, :2]}, "LinDx.F must have shape"),
        (lambda a: {**a, "f": a["f"][:2]}, "LinDx.f must have shape"),
        (lambda a: {**a, "C": a["C"] * torch.tensor([1.0, 1, 1, 0, 1], dtype=D)}, "not positive definite"),
        (lambda a: {**a, "c": a["c"] * float("nan")}, "c must contain only finite values"),
        (lambda a: {**a, "u_lower": -1.0}, "give both u_lower and u_upper"),
        (lambda a: {**a, "u_lower": 1.0, "u_upper": -1.0}, "must not exceed"),
    ],
)
def test_bad_input(change, match):
    x0, C, c, F, f = random_lqr()
    args = change({"x_init": x0, "C": C, "c": c, "F": F, "f": f})
    with pytest.raises(ValueError, match=match):
        lqr_solve(**args)


def test_non_tensor_input_is_a_type_error():
    x0, C, c, F, f = random_lqr()
    with pytest.raises(TypeError, match="x_init must be a torch tensor"):
        lqr_solve(x0.numpy(), C, c, F, f)
    with pytest.raises(TypeError, match="LinDx.F must be a torch tensor"):
        lqr_solve(x0, C, c, F.tolist(), f)
    with pytest.raises(TypeError, match="max_iter must be an integer >= 1"):
        lqr_solve(x0, C, c, F, f, max_iter=2.5)


def test_dtype_mismatch_is_a_type_error():
    x0, C, c, F, f = random_lqr()
    with pytest.raises(TypeError, match="dtype"):
        lqr_solve(x0, C.float(), c, F, f)


def test_mpc_pytorch_agrees_on_linear_dynamics():
    mpc = pytest.importorskip("mpc.mpc")
    x0, C, c, F, f = (t.requires_grad_() for t in random_lqr(T=5, B=3))
    for kw in ({}, {"u_lower": -0.5, "u_upper": 0.5}):
        x1, u1, _ = mpc.MPC(3, 2, 5, lqr_iter=50, eps=1e-10, exit_unconverged=False, verbose=-1, **kw)(
            x0, mpc.QuadCost(C, c), mpc.LinDx(F, f)
        )
        x2, u2 = lqr_solve(x0, C, c, F, f, **kw)
        g1 = torch.autograd.grad((u1**2).sum() + x1.sum(), (x0, C, c, F, f))
        g2 = torch.autograd.grad((u2**2).sum() + x2.sum(), (x0, C, c, F, f))
        assert torch.allclose(u1, u2, atol=1e-8)
        for a, b in zip(g1, g2, strict=True):
            assert torch.allclose(a, b, atol=1e-6)


def test_expand_bounds_broadcasts_and_rejects_bad_shapes():
    like = torch.zeros(1, dtype=torch.float64)
    assert expand_bounds(None, 3, 2, 1, like) is None
    assert expand_bounds(2.0, 3, 2, 1, like).shape == (3, 2, 1)
    per_step = expand_bounds(torch.arange(3.0).reshape(3, 1), 3, 2, 1, like)
    assert per_step.shape == (3, 2, 1) and per_step[2, 1, 0] == 2.0
    with pytest.raises(ValueError, match="bound must be a float or broadcast"):
        expand_bounds(torch.ones(4), 3, 2, 1, like)
