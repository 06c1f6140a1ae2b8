"""Batched, differentiable LQR (Amos et al., NeurIPS 2018) and the box-constrained iLQR loop.

Shapes are those of mpc.pytorch so its users can switch: time-major, ``tau_t = [x_t; u_t]``,

- ``x_init``: ``[B, n]``;  ``C``: ``[T, B, n+m, n+m]``;  ``c``: ``[T, B, n+m]``;
- ``F``: ``[T-1, B, n, n+m]`` and ``f``: ``[T-1, B, n]`` with ``x_{t+1} = F_t tau_t + f_t``
  (``T`` entries are accepted too; the last one is unused, as in mpc.pytorch);
- outputs ``x``: ``[T, B, n]`` (``x[0] = x_init``) and ``u``: ``[T, B, m]``.

The problem is ``min sum_t 1/2 tau_t' C_t tau_t + c_t' tau_t`` subject to the dynamics and
``x_0 = x_init`` (optionally ``u_lower <= u <= u_upper``).  :func:`lqr_solve` is differentiable in
``x_init, C, c, F, f`` through the analytic KKT backward of Amos et al. (their eq. 8): one more LQR
solve with the same ``C, F`` and the upstream gradient as linear cost gives ``d_tau``; costate
recursions give ``lambda`` and ``d_lambda``; then ``grad C_t = 1/2 (d_tau_t tau_t' + tau_t d_tau_t')``,
``grad c_t = d_tau_t``, ``grad F_t = d_lambda_{t+1} tau_t' + lambda_{t+1} d_tau_t'``,
``grad f_t = d_lambda_{t+1}`` and ``grad x_init = d_lambda_0``.  Controls pinned at a bound get zero
sensitivity (the backward LQR fixes them, as mpc.pytorch's ``u_zero_I``).

Example
-------
>>> import torch
>>> from icml25.control.lqr import lqr_solve
>>> T, B, n, m = 5, 2, 2, 1
>>> C = torch.eye(n + m, dtype=torch.float64).repeat(T, B, 1, 1).requires_grad_()
>>> c = torch.zeros(T, B, n + m, dtype=torch.float64)
>>> F = torch.tensor([[1.0, 0.1, 0.0], [0.0, 1.0, 0.1]], dtype=torch.float64).repeat(T - 1, B, 1, 1)
>>> x, u = lqr_solve(torch.ones(B, n, dtype=torch.float64), C, c, F)
>>> u.sum().backward()
>>> C.grad.shape
torch.Size([5, 2, 3, 3])
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from icml25.utils.validation import check_bool, check_callable, check_instance, check_scalar, check_tensor

QuadCost = namedtuple("QuadCost", ["C", "c"])
QuadCost.__doc__ = "Quadratic cost ``sum_t 1/2 tau_t' C_t tau_t + c_t' tau_t`` (mpc.pytorch's ``QuadCost``)."
LinDx = namedtuple("LinDx", ["F", "f"], defaults=(None,))
LinDx.__doc__ = "Affine dynamics ``x_{t+1} = F_t tau_t + f_t`` (mpc.pytorch's ``LinDx``; ``f`` may be None)."

__all__ = ["QuadCost", "LinDx", "lqr_solve", "box_qp", "ILQRResult", "ilqr_solve", "expand_bounds"]


# --------------------------------------------------------------------------- validation
def expand_cost(C: Tensor, c: Tensor, T: int, B: int, n_sc: int) -> tuple[Tensor, Tensor]:
    """Broadcast ``C`` ([N,N], [T,N,N] or [T,B,N,N]) and ``c`` ([N], [T,N] or [T,B,N]) to full shape."""
    for name, t in (("QuadCost.C", C), ("QuadCost.c", c)):
        check_instance(t, name, Tensor, "a torch tensor")
    want_C = f"[{n_sc},{n_sc}], [{T},{n_sc},{n_sc}] or [{T},{B},{n_sc},{n_sc}]"
    if C.dim() == 2:
        C = C.expand(T, B, -1, -1)
    elif C.dim() == 3:
        C = C.unsqueeze(1).expand(-1, B, -1, -1)
    if C.dim() != 4 or tuple(C.shape) != (T, B, n_sc, n_sc):
        raise ValueError(f"QuadCost.C must have shape {want_C} (T, batch, n_state+n_ctrl), got {tuple(C.shape)}")
    want_c = f"[{n_sc}], [{T},{n_sc}] or [{T},{B},{n_sc}]"
    if c.dim() == 1:
        c = c.expand(T, B, -1)
    elif c.dim() == 2:
        c = c.unsqueeze(1).expand(-1, B, -1)
    if c.dim() != 3 or tuple(c.shape) != (T, B, n_sc):
        raise ValueError(f"QuadCost.c must have shape {want_c}, got {tuple(c.shape)}")
    return C, c


def expand_lin_dx(F: Tensor, f: Tensor | None, T: int, B: int, n: int, n_sc: int) -> tuple[Tensor, Tensor]:
    """Broadcast ``F`` ([n,N], [T-1,n,N] or [T-1,B,n,N]; T entries allowed) and ``f`` to ``[T-1,B,...]``."""
    check_instance(F, "LinDx.F", Tensor, "a torch tensor")
    if F.dim() == 2:
        F = F.expand(max(T - 1, 0), B, -1, -1)
    elif F.dim() == 3:
        F = F.unsqueeze(1).expand(-1, B, -1, -1)
    if F.dim() != 4 or F.shape[0] not in (T - 1, T) or tuple(F.shape[1:]) != (B, n, n_sc):
        raise ValueError(
            f"LinDx.F must have shape [{T - 1},{B},{n},{n_sc}] (T-1, batch, n_state, n_state+n_ctrl; "
            f"T time steps are accepted too), got {tuple(F.shape)}"
        )
    F = F[: T - 1]
    if f is None:
        return F, F.new_zeros(T - 1, B, n)
    check_instance(f, "LinDx.f", Tensor, "a torch tensor or None")
    if f.dim() == 1:
        f = f.expand(max(T - 1, 0), B, -1)
    elif f.dim() == 2:
        f = f.unsqueeze(1).expand(-1, B, -1)
    if f.dim() != 3 or f.shape[0] not in (T - 1, T) or tuple(f.shape[1:]) != (B, n):
        raise ValueError(f"LinDx.f must have shape [{T - 1},{B},{n}], got {tuple(f.shape)}")
    return F, f[: T - 1]


def check_control_pd(C: Tensor, n: int) -> None:
    """Raise ``ValueError`` unless every control block ``C_uu`` is positive definite."""
    _, info = torch.linalg.cholesky_ex(C[..., n:, n:].detach())
    if bool((info > 0).any()):
        t, b = (int(i) for i in torch.nonzero(info > 0)[0])
        raise ValueError(
            f"the control block C_uu of the cost is not positive definite (first at t={t}, batch={b}); "
            "the LQR subproblem is then unbounded. Use a positive definite control penalty or u_reg > 0"
        )


def expand_bounds(bound: float | Tensor | None, T: int, B: int, m: int, like: Tensor,
                  name: str = "bound") -> Tensor | None:
    """Broadcast a control bound (a float, ``[m]``, ``[T, m]`` or ``[T, B, m]``) to ``[T, B, m]``; None stays None."""
    if bound is None:
        return None
    if not isinstance(bound, Tensor):
        check_scalar(bound, name, "real", allow_inf=True)
    b = torch.as_tensor(bound, dtype=like.dtype, device=like.device)
    try:
        return b.expand(T, B, m) if b.dim() != 2 else b.unsqueeze(1).expand(T, B, m)
    except RuntimeError as exc:
        raise ValueError(f"{name} must be a float or broadcast to [{T},{B},{m}], got {tuple(b.shape)}") from exc


# --------------------------------------------------------------------------- Riccati recursions
@dataclass
class RiccatiFactor:
    """Feedback gains ``K_t`` [T,B,m,n], Cholesky factors of the masked ``Q_uu`` and value Hessians ``V_t``."""

    K: list[Tensor]
    chol: list[Tensor]
    V: list[Tensor]
    free: Tensor | None


def _mask_quu(Quu: Tensor, Qux: Tensor, free: Tensor | None) -> tuple[Tensor, Tensor]:
    """Fix the non-free controls at zero: identity rows/cols of ``Q_uu``, zero rows of ``Q_ux``."""
    if free is None:
        return Quu, Qux
    fr = free.to(Quu.dtype)
    Quu = Quu * fr.unsqueeze(-1) * fr.unsqueeze(-2) + torch.diag_embed(1.0 - fr)
    return Quu, Qux * fr.unsqueeze(-1)


def _cholesky(Quu: Tensor, t: int) -> Tensor:
    L, info = torch.linalg.cholesky_ex(Quu)
    if bool((info > 0).any()):
        b = int(torch.nonzero(info > 0)[0, 0])
        raise ValueError(
            f"Q_uu of the LQR subproblem is not positive definite at t={t} (batch {b}); the cost is not "
            "convex in the controls along the dynamics. Regularise with u_reg > 0"
        )
    return L


def riccati_factor(C: Tensor, F: Tensor, n: int, free: Tensor | None = None) -> RiccatiFactor:
    """Backward Riccati recursion for ``C`` [T,B,N,N] and ``F`` [T-1,B,n,N]; ``free`` [T,B,m] masks controls."""
    T = C.shape[0]
    K, chol, V = [None] * T, [None] * T, [None] * T
    V_next = None
    for t in range(T - 1, -1, -1):
        Q = C[t] if t == T - 1 else C[t] + F[t].transpose(-1, -2) @ V_next @ F[t]
        Quu, Qux = _mask_quu(Q[..., n:, n:], Q[..., n:, :n], None if free is None else free[t])
        L = _cholesky(Quu, t)
        K[t] = -torch.cholesky_solve(Qux, L)
        V_next = Q[..., :n, :n] + Q[..., :n, n:] @ K[t]
        V_next = 0.5 * (V_next + V_next.transpose(-1, -2))
        chol[t], V[t] = L, V_next
    return RiccatiFactor(K, chol, V, free)


def riccati_solve(
    factor: RiccatiFactor, F: Tensor, c: Tensor, f: Tensor | None = None, x_init: Tensor | None = None
) -> Tensor:
    """Solve the LQR with linear terms ``c`` [T,B,N,R] for R right-hand sides at once; returns tau [T,B,N,R].

    ``f`` [T-1,B,n,R] and ``x_init`` [B,n,R] default to zero (the backward LQR of the KKT system).
    """
    T, B, N, R = c.shape
    n = factor.V[0].shape[-1]
    k = [None] * T
    v_next = None
    for t in range(T - 1, -1, -1):
        q = c[t]
        if t < T - 1:
            Ft = F[t].transpose(-1, -2)
            q = q + Ft @ v_next if f is None else q + Ft @ (factor.V[t + 1] @ f[t] + v_next)
        qu = q[..., n:, :]
        if factor.free is not None:
            qu = qu * factor.free[t].to(q.dtype).unsqueeze(-1)
        k[t] = -torch.cholesky_solve(qu, factor.chol[t])
        v_next = q[..., :n, :] + factor.K[t].transpose(-1, -2) @ q[..., n:, :]
    x = c.new_zeros(B, n, R) if x_init is None else x_init
    taus = []
    for t in range(T):
        tau = torch.cat((x, factor.K[t] @ x + k[t]), dim=-2)
        taus.append(tau)
        if t < T - 1:
            x = F[t] @ tau if f is None else F[t] @ tau + f[t]
    return torch.stack(taus)


def costate(C: Tensor, c: Tensor, F: Tensor, tau: Tensor, n: int) -> Tensor:
    """Multipliers of the dynamics, ``lambda_t = (C_t tau_t + c_t)_x + F_{t,x}' lambda_{t+1}``; [T,B,n,R]."""
    T = tau.shape[0]
    grad = (C @ tau + c)[..., :n, :]
    lam = [None] * T
    lam[T - 1] = grad[T - 1]
    for t in range(T - 2, -1, -1):
        lam[t] = grad[t] + F[t][..., :n].transpose(-1, -2) @ lam[t + 1]
    return torch.stack(lam)


def lqr_vjp(
    C: Tensor,
    c: Tensor,
    F: Tensor,
    tau: Tensor,
    g: Tensor,
    n: int,
    free: Tensor | None = None,
    factor: RiccatiFactor | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Amos et al.'s KKT backward: gradients wrt ``(x_init, C, c, F, f)`` for upstream ``g`` [T,B,N]."""
    factor = riccati_factor(C, F, n, free) if factor is None else factor
    d_tau = riccati_solve(factor, F, g.unsqueeze(-1))
    d_lam = costate(C, g.unsqueeze(-1), F, d_tau, n).squeeze(-1)
    lam = costate(C, c.unsqueeze(-1), F, tau.unsqueeze(-1), n).squeeze(-1)
    d_tau = d_tau.squeeze(-1)
    outer = d_tau.unsqueeze(-1) * tau.unsqueeze(-2)
    dC = 0.5 * (outer + outer.transpose(-1, -2))
    dF = d_lam[1:].unsqueeze(-1) * tau[:-1].unsqueeze(-2) + lam[1:].unsqueeze(-1) * d_tau[:-1].unsqueeze(-2)
    return d_lam[0], dC, d_tau, dF, d_lam[1:]


class LQRFunction(torch.autograd.Function):
    """``tau = LQR(x_init, C, c, F, f)`` with the analytic backward.

    With ``tau_fixed`` the forward is a no-op that returns it (mpc.pytorch's ``no_op_forward``): the
    caller asserts that ``tau_fixed`` solves this LQR (an iLQR fixed point) and gets its gradient.
    ``adjoint(g, factor)``, if given, maps the upstream gradient before the KKT backward (DiLQR's
    implicit correction); it receives the Riccati factor so that it is computed once per backward.
    """

    @staticmethod
    def forward(ctx, x_init, C, c, F, f, tau_fixed, free, adjoint=None):  # noqa: D102
        n = x_init.shape[-1]
        if tau_fixed is None:
            factor = riccati_factor(C, F, n, free)
            tau = riccati_solve(factor, F, c.unsqueeze(-1), f.unsqueeze(-1), x_init.unsqueeze(-1)).squeeze(-1)
        else:
            tau = tau_fixed.clone()
        ctx.save_for_backward(C, c, F, tau, free)
        ctx.n, ctx.adjoint = n, adjoint
        return tau

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        C, c, F, tau, free = ctx.saved_tensors
        factor = riccati_factor(C, F, ctx.n, free)
        if ctx.adjoint is not None:
            g = ctx.adjoint(g, factor)
        dx, dC, dc, dF, df = lqr_vjp(C, c, F, tau, g, ctx.n, free, factor)
        return dx, dC, dc, dF, df, None, None, None


# --------------------------------------------------------------------------- box QP and iLQR
def box_qp(
    H: Tensor,
    q: Tensor,
    lower: Tensor,
    upper: Tensor,
    x0: Tensor | None = None,
    max_iter: int = 50,
    tol: float = 1e-12,
    *,
    return_converged: bool = False,
) -> tuple[Tensor, Tensor] | tuple[Tensor, Tensor, Tensor]:
    """Batched projected-Newton solve of ``min 1/2 x'Hx + q'x`` s.t. ``lower <= x <= upper``.

    ``H`` [B,m,m] positive definite, ``q, lower, upper`` [B,m] (infinite bounds allowed, NaN not).  Returns the
    minimiser and the mask of free (not clamped) coordinates, as in Tassa et al. (2014)'s control-limited DDP.
    The loop always stops: after at most ``max_iter`` Newton steps (each with at most 30 halvings of the step
    size).  With ``return_converged=True`` a third value, a [B] bool mask, says which problems met ``tol``
    (largest Newton step ``<= tol``) within the cap; the others return the last iterate.  Raises ``TypeError``
    for non-tensor input and ``ValueError`` for mismatched shapes, non-finite ``H``/``q``/``x0``, NaN bounds
    or ``lower > upper``.
    """
    for name, t in (("H", H), ("q", q), ("lower", lower), ("upper", upper)):
        check_instance(t, name, Tensor, "a torch tensor")
    max_iter = check_scalar(max_iter, "max_iter", "int", min=1)
    tol = check_scalar(tol, "tol", "real", min=0.0)
    return_converged = check_bool(return_converged, "return_converged")
    if q.dim() != 2 or H.shape != (*q.shape, q.shape[-1]):
        raise ValueError(f"H must be [B,m,m] and q [B,m], got {tuple(H.shape)} and {tuple(q.shape)}")
    for name, t in (("lower", lower), ("upper", upper)) + ((("x0", x0),) if x0 is not None else ()):
        check_instance(t, name, Tensor, "a torch tensor")
        if t.shape != q.shape:
            raise ValueError(f"{name} must have the shape of q {tuple(q.shape)}, got {tuple(t.shape)}")
    for name, t in (("H", H), ("q", q)) + ((("x0", x0),) if x0 is not None else ()):
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    _check_bounds(lower, upper, "lower", "upper")
    x, free, converged = _box_qp(H, q, lower, upper, x0, max_iter, tol)
    return (x, free, converged) if return_converged else (x, free)


def _check_bounds(lower: Tensor, upper: Tensor, lo_name: str, hi_name: str) -> None:
    """NaN bounds or ``lower > upper`` (a NaN comparison is false, so both are checked) raise ``ValueError``."""
    for name, t in ((lo_name, lower), (hi_name, upper)):
        if bool(torch.isnan(t).any()):
            raise ValueError(f"{name} must not contain NaN (use +-inf for no bound)")
    if bool((lower > upper).any()):
        raise ValueError(f"{lo_name} must not exceed {hi_name}")


def _box_qp(H, q, lower, upper, x0=None, max_iter=50, tol=1e-12):
    """:func:`box_qp` without input checks (the iLQR backward pass): ``(x, free, converged)``."""
    if H.shape[-1] == 1:
        x = torch.maximum(torch.minimum(-q / H[..., 0], upper), lower)
        return x, (x > lower) & (x < upper), torch.ones(q.shape[:-1], dtype=torch.bool, device=q.device)

    def objective(z):
        return 0.5 * (z.unsqueeze(-2) @ H @ z.unsqueeze(-1)).squeeze(-1).squeeze(-1) + (q * z).sum(-1)

    def newton_step(x):
        grad = (H @ x.unsqueeze(-1)).squeeze(-1) + q
        free = ~(((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0)))
        Hf, _ = _mask_quu(H, H, free)
        return grad, -torch.linalg.solve(Hf, (grad * free).unsqueeze(-1)).squeeze(-1)

    x = torch.zeros_like(q) if x0 is None else x0.clone()
    x = torch.maximum(torch.minimum(x, upper), lower)
    for _ in range(max_iter):
        grad, step = newton_step(x)
        if float(step.abs().max()) <= tol:
            break
        f0, alpha = objective(x), torch.ones_like(x[..., :1])
        for _ in range(30):
            cand = torch.maximum(torch.minimum(x + alpha * step, upper), lower)
            ok = objective(cand) <= f0 + 1e-4 * (grad * (cand - x)).sum(-1)
            if bool(ok.all()):
                break
            alpha = torch.where(ok.unsqueeze(-1), alpha, 0.5 * alpha)
        x = cand
    grad, step = newton_step(x)
    converged = step.abs().amax(-1) <= tol
    return x, ~(((x <= lower) & (grad >= 0)) | ((x >= upper) & (grad <= 0))), converged


def _ilqr_backward_pass(
    C: Tensor, c_lin: Tensor, F: Tensor, n: int, lo: Tensor | None, hi: Tensor | None
) -> tuple[list[Tensor], list[Tensor]]:
    """Control-limited Riccati pass in delta space (zero defects, ``dx_0 = 0``): gains ``K_t, k_t``."""
    T = C.shape[0]
    K, k = [None] * T, [None] * T
    V_next = v_next = None
    for t in range(T - 1, -1, -1):
        if t == T - 1:
            Q, q = C[t], c_lin[t]
        else:
            Ft = F[t].transpose(-1, -2)
            Q = C[t] + (Ft @ V_next) @ F[t]
            q = c_lin[t] + (Ft @ v_next).squeeze(-1)
        Qxx, Qxu, Qux, Quu = Q[..., :n, :n], Q[..., :n, n:], Q[..., n:, :n], Q[..., n:, n:]
        qx, qu = q[..., :n].unsqueeze(-1), q[..., n:].unsqueeze(-1)
        if lo is None:  # optimal gains: V = Qxx + Qxu K and v = qx + Qxu k
            L = _cholesky(Quu, t)
            K[t] = -torch.cholesky_solve(torch.cat((Qux, qu), -1), L)
            K[t], k[t] = K[t][..., :n], K[t][..., n:].squeeze(-1)
            V_next = Qxx + Qxu @ K[t]
            v_next = qx + Qxu @ k[t].unsqueeze(-1)
        else:  # clamped controls: general formulas with the box-QP step
            _cholesky(Quu, t)
            k[t], free, _ = _box_qp(Quu, qu.squeeze(-1), lo[t], hi[t])
            Quu_m, Qux_m = _mask_quu(Quu, Qux, free)
            K[t] = -torch.linalg.solve(Quu_m, Qux_m)
            KT = K[t].transpose(-1, -2)
            V_next = Qxx + Qxu @ K[t] + KT @ Qux + KT @ Quu @ K[t]
            v_next = qx + KT @ qu + (Qxu + KT @ Quu) @ k[t].unsqueeze(-1)
        V_next = 0.5 * (V_next + V_next.transpose(-1, -2))
    return K, k


@dataclass
class ILQRResult:
    """Output of :func:`ilqr_solve`: the trajectory, its cost, the last full-step size and the iterates."""

    x: Tensor
    u: Tensor
    cost: Tensor
    du_norm: Tensor
    n_iter: int
    converged: Tensor
    iterates: list[Tensor]


def _rollout(step, x_init, u_nom, x_nom=None, K=None, k=None, alpha=None, lo=None, hi=None):
    T = u_nom.shape[0]
    xs, us = [x_init], []
    for t in range(T):
        u = u_nom[t]
        if K is not None:
            u = u + (K[t] @ (xs[t] - x_nom[t]).unsqueeze(-1)).squeeze(-1) + alpha * k[t]
        if lo is not None:
            u = torch.maximum(torch.minimum(u, hi[t]), lo[t])
        us.append(u)
        if t < T - 1:
            xs.append(step(t, xs[t], u))
    return torch.stack(xs), torch.stack(us)


def ilqr_solve(
    x_init: Tensor,
    u_init: Tensor,
    step: Callable[[int, Tensor, Tensor], Tensor],
    linearize: Callable[[Tensor], Tensor],
    quadratize: Callable[[Tensor], tuple[Tensor, Tensor]],
    total_cost: Callable[[Tensor], Tensor],
    u_lower: Tensor | None = None,
    u_upper: Tensor | None = None,
    max_iter: int = 50,
    eps: float = 1e-7,
    linesearch_decay: float = 0.2,
    max_linesearch_iter: int = 10,
    keep_iterates: bool = False,
) -> ILQRResult:
    """Box-constrained iLQR (Tassa et al., 2014; mpc.pytorch's loop) without an autograd tape.

    ``step(t, x, u)`` advances the dynamics, ``linearize(tau)`` returns ``F`` [T-1,B,n,N] at a trajectory,
    ``quadratize(tau)`` the cost's ``(C, c)`` and ``total_cost(tau)`` its value [B].  Each iteration
    solves the LQR subproblem in delta space, rolls out ``u = u_k + K dx + alpha k`` on the true
    dynamics with a per-example backtracking line search on ``alpha``, and stops when the full-step
    control change ``||du||`` of every example is below ``eps``.  ``x_init`` is [B, n], ``u_init`` and the
    optional bounds [T, B, m], all finite (bounds may be +-inf).
    """
    x_init = check_tensor(x_init, "x_init", ndim=2, floating=True, finite=True)
    u_init = check_tensor(u_init, "u_init", ndim=3, floating=True, finite=True)
    if x_init.numel() == 0 or u_init.numel() == 0 or u_init.shape[1] != x_init.shape[0]:
        raise ValueError(f"x_init [B, n] and u_init [T, B, m] must be non-empty with the same B, got shapes "
                         f"{tuple(x_init.shape)} and {tuple(u_init.shape)}")
    for name, fn in (("step", step), ("linearize", linearize), ("quadratize", quadratize),
                     ("total_cost", total_cost)):
        check_callable(fn, name)
    if (u_lower is None) != (u_upper is None):
        raise ValueError("give both u_lower and u_upper, or neither")
    if u_lower is not None:
        check_tensor(u_lower, "u_lower", shape=tuple(u_init.shape), floating=True)
        check_tensor(u_upper, "u_upper", shape=tuple(u_init.shape), floating=True)
        _check_bounds(u_lower, u_upper, "u_lower", "u_upper")
    max_iter = check_scalar(max_iter, "max_iter", "int", min=1)
    max_linesearch_iter = check_scalar(max_linesearch_iter, "max_linesearch_iter", "int", min=1)
    eps = check_scalar(eps, "eps", "real", min=0.0)
    linesearch_decay = check_scalar(linesearch_decay, "linesearch_decay", "real", min=0.0, max=1.0,
                                    inclusive="neither")
    keep_iterates = check_bool(keep_iterates, "keep_iterates")
    n = x_init.shape[-1]
    with torch.no_grad():
        x, u = _rollout(step, x_init, u_init, lo=u_lower, hi=u_upper)
        tau = torch.cat((x, u), -1)
        cost = total_cost(tau)
        iterates = [tau] if keep_iterates else []
        du_norm = torch.full_like(cost, float("inf"))
        n_iter = 0
        for n_iter in range(1, max_iter + 1):  # noqa: B007
            C, c = quadratize(tau)
            F = linearize(tau)
            c_lin = (C @ tau.unsqueeze(-1)).squeeze(-1) + c
            lo = None if u_lower is None else u_lower - u
            hi = None if u_upper is None else u_upper - u
            K, k = _ilqr_backward_pass(C, c_lin, F, n, lo, hi)
            alpha = torch.ones_like(cost).unsqueeze(-1)
            accepted = torch.zeros_like(cost, dtype=torch.bool)
            slack = 16 * torch.finfo(cost.dtype).eps * cost.abs().clamp_min(1.0)  # round-off near the optimum
            new_x, new_u, new_cost = x.clone(), u.clone(), cost.clone()
            for ls in range(max_linesearch_iter):
                xt, ut = _rollout(step, x_init, u, x, K, k, alpha, u_lower, u_upper)
                ct = total_cost(torch.cat((xt, ut), -1))
                if ls == 0:
                    du_norm = (ut - u).transpose(0, 1).reshape(ut.shape[1], -1).norm(dim=-1)
                ok = (ct <= cost + slack) & ~accepted
                new_x[:, ok], new_u[:, ok], new_cost[ok] = xt[:, ok], ut[:, ok], ct[ok]
                accepted |= ok
                if bool(accepted.all()):
                    break
                alpha = torch.where(accepted.unsqueeze(-1), alpha, alpha * linesearch_decay)
            x, u, cost = new_x, new_u, new_cost
            tau = torch.cat((x, u), -1)
            if keep_iterates:
                iterates.append(tau)
            if bool((du_norm < eps).all()):
                break
    return ILQRResult(x, u, cost, du_norm, n_iter, du_norm < eps, iterates)


def active_bounds(u: Tensor, u_lower: Tensor | None, u_upper: Tensor | None, tol: float = 1e-8) -> Tensor | None:
    """Mask of controls pinned at a bound (``|u - bound| <= tol``), or None without bounds."""
    if u_lower is None:
        return None
    return ((u - u_lower).abs() <= tol) | ((u - u_upper).abs() <= tol)


# --------------------------------------------------------------------------- public LQR solve
def lqr_solve(
    x_init: Tensor,
    C: Tensor,
    c: Tensor,
    F: Tensor,
    f: Tensor | None = None,
    u_lower: float | Tensor | None = None,
    u_upper: float | Tensor | None = None,
    max_iter: int = 50,
) -> tuple[Tensor, Tensor]:
    """Solve the time-varying LQR and return ``(x [T,B,n], u [T,B,m])``, differentiable (Amos et al.).

    ``C, c`` and ``F, f`` follow mpc.pytorch's ``QuadCost`` and ``LinDx`` shapes (see the module
    docstring; lower-rank ``C, c, F, f`` broadcast over time and batch).  With bounds the box-constrained
    problem is solved by control-limited iterations (at most ``max_iter``) and pinned controls get zero
    gradient.  Raises ``ValueError`` on shape mismatches, non-finite input or a ``C_uu`` that is not
    positive definite.
    """
    check_instance(x_init, "x_init", Tensor, "a torch tensor")
    check_instance(C, "C", Tensor, "a torch tensor")
    max_iter = check_scalar(max_iter, "max_iter", "int", min=1)
    if x_init.dim() != 2:
        raise ValueError(f"x_init must have shape [batch, n_state], got {tuple(x_init.shape)}")
    B, n = x_init.shape
    n_sc = C.shape[-1] if C.dim() else 0
    if C.dim() not in (3, 4):
        raise ValueError("C must be 3-D [T,N,N] or 4-D [T,B,N,N] so that the horizon T is known")
    T = C.shape[0]
    if B == 0 or n == 0 or T == 0:
        raise ValueError(f"x_init [batch, n_state] and C [T, ...] must be non-empty, got shapes "
                         f"{tuple(x_init.shape)} and {tuple(C.shape)}")
    if n_sc <= n:
        raise ValueError(f"C is {n_sc}x{n_sc} but must be (n_state+n_ctrl) square with n_state={n} and n_ctrl >= 1")
    C, c = expand_cost(C, c, T, B, n_sc)
    F, f = expand_lin_dx(F, f, T, B, n, n_sc)
    for name, tensor in (("x_init", x_init), ("C", C), ("c", c), ("F", F), ("f", f)):
        if tensor.dtype != x_init.dtype:
            raise TypeError(f"{name} has dtype {tensor.dtype} but x_init has {x_init.dtype}; use one dtype")
        if not bool(torch.isfinite(tensor.detach()).all()):
            raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    check_control_pd(C, n)
    lo = expand_bounds(u_lower, T, B, n_sc - n, x_init, "u_lower")
    hi = expand_bounds(u_upper, T, B, n_sc - n, x_init, "u_upper")
    if (lo is None) != (hi is None):
        raise ValueError("give both u_lower and u_upper, or neither")
    if lo is None:
        tau = LQRFunction.apply(x_init, C, c, F, f, None, None)
        return tau[..., :n], tau[..., n:]
    _check_bounds(lo, hi, "u_lower", "u_upper")
    Cd, cd, Fd, fd = C.detach(), c.detach(), F.detach(), f.detach()

    def step(t, x, u):
        return (Fd[t] @ torch.cat((x, u), -1).unsqueeze(-1)).squeeze(-1) + fd[t]

    def total(tau):
        return (0.5 * (tau.unsqueeze(-2) @ Cd @ tau.unsqueeze(-1)).squeeze(-1).squeeze(-1) + (cd * tau).sum(-1)).sum(0)

    u0 = torch.zeros(T, B, n_sc - n, dtype=x_init.dtype, device=x_init.device)
    res = ilqr_solve(
        x_init.detach(), u0, step, lambda tau: Fd, lambda tau: (Cd, cd), total, lo, hi, max_iter=max_iter, eps=1e-10
    )
    tau = torch.cat((res.x, res.u), -1)
    free = ~active_bounds(res.u, lo, hi)
    tau = LQRFunction.apply(x_init, C, c, F, f, tau, free)
    return tau[..., :n], tau[..., n:]
