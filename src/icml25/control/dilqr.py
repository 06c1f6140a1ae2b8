"""DiLQR (Wang, Loewen, Forbes, Gopaluni & Pan, ICML 2025): exact iLQR gradients by implicit differentiation.

The converged iLQR trajectory is a fixed point ``tau* = Phi(tau*) = LQR(C, c, F(tau*, theta), f(tau*, theta))``.
The implicit function theorem gives ``d tau*/d theta = (I - J_tau)^{-1} J_theta``; the backward pass solves
the adjoint system ``(I - J_tau)' w = g`` for the upstream gradient ``g`` and pushes ``w`` through one LQR
backward (Amos et al.) to ``theta``, ``C``, ``c`` and ``x_init``.  Its cost does not depend on the number of
iLQR iterations.  ``grad_mode="diffmpc"`` keeps only ``w = g`` (mpc.pytorch's gradient, the linearisation
point held fixed) and ``grad_mode="unroll"`` backpropagates through every iteration.

Example
-------
>>> import torch
>>> from icml25.control import DiLQR, PendulumDynamics, pendulum_cost, sample_pendulum_states
>>> dyn = PendulumDynamics(g=12.0).double()
>>> x0 = sample_pendulum_states(4, seed=0)
>>> x, u, info = DiLQR(n_state=3, n_ctrl=1, T=20)(x0, pendulum_cost(20, 4), dyn)
>>> bool(info.converged.all()), tuple(u.shape)
(True, (20, 4, 1))
>>> (u ** 2).sum().backward()            # exact gradient of the converged solution wrt (g, m, l)
>>> dyn.params.grad.shape
torch.Size([3])
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from icml25.control.lqr import (
    LinDx,
    LQRFunction,
    QuadCost,
    RiccatiFactor,
    active_bounds,
    check_control_pd,
    costate,
    expand_bounds,
    expand_cost,
    expand_lin_dx,
    ilqr_solve,
    riccati_factor,
    riccati_solve,
)
from icml25.utils.random import Seed, torch_generator
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

GRAD_MODES = ("implicit", "diffmpc", "unroll", "none")
BACKWARDS = ("dense", "fixed_point")

__all__ = [
    "Dynamics",
    "PendulumDynamics",
    "CartpoleDynamics",
    "DiLQR",
    "DiLQRInfo",
    "implicit_cotangent",
    "dynamics_lagrangian_hessian",
    "linearize",
    "pendulum_cost",
    "sample_pendulum_states",
    "pendulum_problem",
]


# --------------------------------------------------------------------------- dynamics
class Dynamics(nn.Module):
    """Discrete dynamics ``x_next = f_theta(x, u)`` acting row by row on ``x [B, n]``, ``u [B, m]``.

    Parameters ``theta`` are ordinary ``nn.Parameter``s.  A subclass may define
    ``jacobian(x, u) -> (Fx [B,n,n], Fu [B,n,m])`` written with differentiable torch operations; it is
    then used instead of autograd for the linearisation.  Row ``b`` of the output must depend only on
    row ``b`` of the input (no batch statistics), as in mpc.pytorch.
    """

    n_state: int
    n_ctrl: int

    def _check_inputs(self, x: Tensor, u: Tensor) -> None:
        """``x`` [..., n_state] and ``u`` [..., n_ctrl], floating, non-empty, with the same leading shape."""
        check_tensor(x, "x", floating=True)
        check_tensor(u, "u", floating=True)
        if x.ndim == 0 or x.shape[-1] != self.n_state or x.numel() == 0:
            raise ValueError(f"x must be a non-empty tensor [..., {self.n_state}], got shape {tuple(x.shape)}")
        if u.shape != x.shape[:-1] + (self.n_ctrl,):
            raise ValueError(f"u must have shape {tuple(x.shape[:-1]) + (self.n_ctrl,)} to match x, "
                             f"got {tuple(u.shape)}")


def _physical(**values: float) -> list[float]:
    """Each physical constant (a mass, a length, g, dt) as a float, checked to be finite and > 0."""
    return [check_scalar(v, name, "real", min=0.0, inclusive="neither") for name, v in values.items()]


class PendulumDynamics(Dynamics):
    """Gymnasium ``Pendulum-v1`` on the state ``(cos th, sin th, th_dot)`` with ``theta = (g, m, l)``.

    ``th_dot' = th_dot + dt (3g/(2l) sin th + 3u/(m l^2))``, ``th' = th + dt th_dot'``.  Unlike the
    environment, the torque is not clipped inside the step (give ``u_lower/u_upper`` to :class:`DiLQR`)
    and ``th_dot`` is not clipped to [-8, 8].  ``dtype`` is that of the parameters (give ``torch.float64``
    for finite differences: a float32 parameter rounds ``g + 1e-5``); the step follows the input dtype.
    """

    n_state, n_ctrl = 3, 1

    def __init__(
        self, g: float = 10.0, m: float = 1.0, l: float = 1.0, dt: float = 0.05, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.params = nn.Parameter(torch.tensor(_physical(g=g, m=m, l=l), dtype=dtype))
        (self.dt,) = _physical(dt=dt)

    def _coefficients(self, x: Tensor) -> tuple[Tensor, Tensor]:
        g, m, l = self.params.to(dtype=x.dtype, device=x.device).unbind()
        return 1.5 * g / l, 3.0 / (m * l**2)

    def forward(self, x: Tensor, u: Tensor) -> Tensor:  # noqa: D102
        self._check_inputs(x, u)
        a, b = self._coefficients(x)
        cos_th, sin_th, dth = x.unbind(-1)
        th = torch.atan2(sin_th, cos_th)
        new_dth = dth + self.dt * (a * sin_th + b * u[..., 0])
        new_th = th + self.dt * new_dth
        return torch.stack((torch.cos(new_th), torch.sin(new_th), new_dth), -1)

    def jacobian(self, x: Tensor, u: Tensor) -> tuple[Tensor, Tensor]:
        """Analytic ``(df/dx [B,3,3], df/du [B,3,1])``, differentiable in ``(g, m, l)``."""
        self._check_inputs(x, u)
        a, b = self._coefficients(x)
        cos_th, sin_th, dth = x.unbind(-1)
        r2 = cos_th**2 + sin_th**2
        dt = self.dt
        new_dth = dth + dt * (a * sin_th + b * u[..., 0])
        new_th = torch.atan2(sin_th, cos_th) + dt * new_dth
        zero, one = torch.zeros_like(dth), torch.ones_like(dth)
        d_dth = torch.stack((zero, dt * a * one, one, dt * b * one), -1)
        d_th = torch.stack((-sin_th / r2, cos_th / r2 + dt * dt * a, dt * one, dt * dt * b * one), -1)
        J = torch.stack((-torch.sin(new_th).unsqueeze(-1) * d_th, torch.cos(new_th).unsqueeze(-1) * d_th, d_dth), -2)
        return J[..., :3], J[..., 3:]


class CartpoleDynamics(Dynamics):
    """Cart-pole of the official DiLQR code on ``(x, x_dot, cos th, sin th, th_dot)``, theta = (g, m_c, m_p, l).

    No analytic Jacobian: linearisation and second derivatives use autograd.
    """

    n_state, n_ctrl = 5, 1

    def __init__(
        self,
        g: float = 9.8,
        m_cart: float = 1.0,
        m_pole: float = 0.1,
        l: float = 0.5,
        dt: float = 0.05,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.params = nn.Parameter(torch.tensor(_physical(g=g, m_cart=m_cart, m_pole=m_pole, l=l), dtype=dtype))
        (self.dt,) = _physical(dt=dt)

    def forward(self, x: Tensor, u: Tensor) -> Tensor:  # noqa: D102
        self._check_inputs(x, u)
        g, m_c, m_p, l = self.params.to(dtype=x.dtype, device=x.device).unbind()
        pos, vel, cos_th, sin_th, dth = x.unbind(-1)
        total = m_c + m_p
        cart_in = (u[..., 0] + m_p * l * dth**2 * sin_th) / total
        th_acc = (g * sin_th - cos_th * cart_in) / (l * (4.0 / 3.0 - m_p * cos_th**2 / total))
        x_acc = cart_in - m_p * l * th_acc * cos_th / total
        th = torch.atan2(sin_th, cos_th) + self.dt * dth
        return torch.stack(
            (pos + self.dt * vel, vel + self.dt * x_acc, torch.cos(th), torch.sin(th), dth + self.dt * th_acc), -1
        )


def pendulum_cost(
    T: int,
    batch: int,
    goal_weights: tuple[float, float, float] = (1.0, 1.0, 0.1),
    ctrl_penalty: float = 1e-3,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> QuadCost:
    """The official swing-up cost: ``q = (goal_weights, ctrl_penalty)``, ``p = -sqrt(q_x) * (1, 0, 0)``.

    ``T`` and ``batch`` are integers >= 1, ``goal_weights`` three reals >= 0, ``ctrl_penalty`` > 0.
    """
    T, batch = check_scalar(T, "T", "int", min=1), check_scalar(batch, "batch", "int", min=1)
    goal_weights = check_sequence(goal_weights, "goal_weights", item=lambda v, n: check_scalar(v, n, "real", min=0.0))
    if len(goal_weights) != 3:
        raise ValueError(f"goal_weights must hold 3 weights (cos th, sin th, th_dot), got {len(goal_weights)}")
    ctrl_penalty = check_scalar(ctrl_penalty, "ctrl_penalty", "real", min=0.0, inclusive="neither")
    q = torch.tensor([*goal_weights, ctrl_penalty], dtype=dtype, device=device)
    goal = torch.tensor([1.0, 0.0, 0.0], dtype=dtype, device=device)
    p = torch.cat((-q[:3].sqrt() * goal, q.new_zeros(1)))
    return QuadCost(torch.diag(q).expand(T, batch, 4, 4).clone(), p.expand(T, batch, 4).clone())


def sample_pendulum_states(
    n: int, seed: Seed | torch.Generator = 0, dtype: torch.dtype = torch.float64, max_angle: float = math.pi / 2
) -> Tensor:
    """``n`` states ``(cos th, sin th, th_dot)`` with ``th ~ U(-max_angle, max_angle)``, ``th_dot ~ U(-1, 1)``.

    ``seed``: an int, a NumPy Generator, or a ``torch.Generator`` (drawn from as is).
    """
    n = check_scalar(n, "n", "int", min=1)
    max_angle = check_scalar(max_angle, "max_angle", "real", min=0.0, inclusive="neither")
    gen = torch_generator(seed)
    th = (2 * torch.rand(n, generator=gen, dtype=dtype) - 1) * max_angle
    dth = 2 * torch.rand(n, generator=gen, dtype=dtype) - 1
    return torch.stack((torch.cos(th), torch.sin(th), dth), -1)


# --------------------------------------------------------------------------- derivatives of the dynamics
def _check_tau(tau: Tensor, name: str, n: int, empty: bool = False) -> tuple[int, int, int]:
    """``tau`` [T, B, N] finite and floating with ``1 <= n < N``; returns ``(T, B, N)``."""
    check_tensor(tau, name, ndim=3, floating=True, finite=True)
    T, B, N = tau.shape
    if B == 0 or N == 0 or (T == 0 and not empty):
        raise ValueError(f"{name} must be a non-empty [T, B, n_state + n_ctrl] tensor, got shape {tuple(tau.shape)}")
    check_scalar(n, "n", "int", min=1, max=N - 1)
    return T, B, N


def _row_jacobian(y: Tensor, rows: Tensor, create_graph: bool) -> Tensor:
    """``d y[r, i] / d rows[r]`` for row-wise maps: [M, k, N] from ``k`` vector-Jacobian products."""
    cols = []
    for i in range(y.shape[-1]):
        (gi,) = torch.autograd.grad(
            y[:, i].sum(), rows, create_graph=create_graph, retain_graph=True, allow_unused=True
        )
        cols.append(torch.zeros_like(rows) if gi is None else gi)
    return torch.stack(cols, -2)


def linearize(dynamics: Callable, tau: Tensor, n: int, create_graph: bool = False) -> tuple[Tensor, Tensor]:
    """``F_t = df/dtau (tau_t)`` [T-1,B,n,N] and ``f_t = f(tau_t) - F_t tau_t`` [T-1,B,n] along ``tau`` [T,B,N].

    With ``create_graph`` both keep their autograd graph to the parameters (and to ``tau`` if it has one).
    """
    check_callable(dynamics, "dynamics")
    T, B, N = _check_tau(tau, "tau", n)
    create_graph = check_bool(create_graph, "create_graph")
    if T == 1:
        return tau.new_zeros(0, B, n, N), tau.new_zeros(0, B, n)
    rows = tau[:-1].reshape(-1, N)
    jac = getattr(dynamics, "jacobian", None)
    if jac is not None:
        y = dynamics(rows[:, :n], rows[:, n:])
        J = torch.cat(jac(rows[:, :n], rows[:, n:]), -1)
    else:
        with torch.enable_grad():
            if not rows.requires_grad:
                rows = rows.detach().requires_grad_(True)
            y = dynamics(rows[:, :n], rows[:, n:])
            J = _row_jacobian(y, rows, create_graph)
        if not create_graph:
            y, J, rows = y.detach(), J.detach(), rows.detach()
    f = y - (J @ rows.unsqueeze(-1)).squeeze(-1)
    return J.reshape(T - 1, B, n, N), f.reshape(T - 1, B, n)


def dynamics_lagrangian_hessian(dynamics: Callable, tau: Tensor, lam: Tensor, n: int) -> Tensor:
    """``W_t = sum_i lam_i d^2 f_i / dtau^2 (tau_t)`` for ``tau`` [T',B,N] and multipliers ``lam`` [T',B,n].

    This is the only second-order information the implicit backward needs: with
    ``f(tau) = f_theta(tau) - F(tau) tau`` the chain rule through ``(F, f)`` collapses to ``J_tau' v = W S v``
    (``S`` the LQR sensitivity), so no third-order tensors are formed.
    """
    check_callable(dynamics, "dynamics")
    Tp, B, N = _check_tau(tau, "tau", n, empty=True)
    check_tensor(lam, "lam", shape=(Tp, B, n), floating=True, finite=True)
    if Tp == 0:
        return tau.new_zeros(0, B, N, N)
    rows = tau.detach().reshape(-1, N).requires_grad_(True)
    lr = lam.detach().reshape(-1, n)
    with torch.enable_grad():
        jac = getattr(dynamics, "jacobian", None)
        if jac is not None:
            J = torch.cat(jac(rows[:, :n], rows[:, n:]), -1)
            g1 = (lr.unsqueeze(-1) * J).sum(-2)
        else:
            y = dynamics(rows[:, :n], rows[:, n:])
            (g1,) = torch.autograd.grad((y * lr).sum(), rows, create_graph=True)
        H = _row_jacobian(g1, rows, create_graph=False)
    H = 0.5 * (H + H.transpose(-1, -2))
    return H.detach().reshape(Tp, B, N, N)


# --------------------------------------------------------------------------- implicit backward
def implicit_cotangent(
    g: Tensor,
    dynamics: Callable,
    tau: Tensor,
    C: Tensor,
    c: Tensor,
    F: Tensor,
    n: int,
    free: Tensor | None = None,
    method: str = "dense",
    fp_max_iter: int = 50,
    fp_tol: float = 1e-8,
    cond_max: float = 1e12,
    factor: RiccatiFactor | None = None,
) -> Tensor:
    """Solve DiLQR's adjoint system ``(I - J_tau)' w = g`` at the fixed point ``tau`` [T,B,N].

    ``J_tau' = W S`` with ``S`` the LQR sensitivity (``S v`` is the KKT-backward direction ``d_tau``
    for the cotangent ``v``) and ``W`` the block-diagonal Lagrangian Hessian of the dynamics.  ``dense``
    builds ``S`` from all ``T(n+m)`` unit cotangents in one multi-right-hand-side Riccati solve and calls
    the inverse (``lstsq`` with a warning when the 1-norm condition number exceeds ``cond_max`` or
    ``I - J_tau`` is singular); ``fixed_point`` iterates ``w <- g + W S w`` (falls back to dense with a
    warning if it does not converge in ``fp_max_iter`` iterations).  Neither depends on the number of
    forward iterations.  ``factor`` is the Riccati factor of ``(C, F, free)`` if already computed.
    """
    check_callable(dynamics, "dynamics")
    T, B, N = _check_tau(tau, "tau", n)
    check_tensor(g, "g", shape=(T, B, N), floating=True, finite=True)
    check_tensor(C, "C", shape=(T, B, N, N), floating=True, finite=True)
    check_tensor(c, "c", shape=(T, B, N), floating=True, finite=True)
    check_tensor(F, "F", shape=(T - 1, B, n, N), floating=True, finite=True)
    if free is not None:
        check_tensor(free, "free", shape=(T, B, N - n))
        if free.dtype != torch.bool:
            raise TypeError(f"free must be a boolean tensor (True where a control is not at a bound), got {free.dtype}")
    check_choice(method, "method", BACKWARDS)
    fp_max_iter = check_scalar(fp_max_iter, "fp_max_iter", "int", min=1)
    fp_tol = check_scalar(fp_tol, "fp_tol", "real", min=0.0)
    cond_max = check_scalar(cond_max, "cond_max", "real", min=0.0, inclusive="neither", allow_inf=True)
    if factor is not None:
        check_instance(factor, "factor", RiccatiFactor)
    lam = costate(C, c.unsqueeze(-1), F, tau.unsqueeze(-1), n).squeeze(-1)
    W = dynamics_lagrangian_hessian(dynamics, tau[:-1], lam[1:], n)
    W = torch.cat((W, W.new_zeros(1, B, N, N)))
    factor = riccati_factor(C, F, n, free) if factor is None else factor
    if method == "fixed_point":
        w = g
        for _ in range(fp_max_iter):
            d_tau = riccati_solve(factor, F, w.unsqueeze(-1))
            w_new = g + (W @ d_tau).squeeze(-1)
            delta = float((w_new - w).abs().max())
            w = w_new
            if delta <= fp_tol * max(1.0, float(w.abs().max())):
                return w
        warnings.warn(
            f"DiLQR fixed-point backward did not converge in {fp_max_iter} iterations (last change {delta:.1e}); "
            "the Neumann series of J_tau may diverge here. Falling back to the dense solve",
            RuntimeWarning,
            stacklevel=2,
        )
    R = T * N
    eye = torch.eye(R, dtype=g.dtype, device=g.device).reshape(T, 1, N, R).expand(T, B, N, R)
    S = riccati_solve(factor, F, eye)
    A = torch.eye(R, dtype=g.dtype, device=g.device) - (W @ S).transpose(0, 1).reshape(B, R, R)
    rhs = g.transpose(0, 1).reshape(B, R, 1)
    A_inv, info = torch.linalg.inv_ex(A)
    w = A_inv @ rhs
    cond = torch.linalg.matrix_norm(A, 1) * torch.linalg.matrix_norm(A_inv, 1)
    bad = (info > 0) | ~(cond <= cond_max)
    if bool(bad.any()):
        warnings.warn(
            f"DiLQR: I - J_tau is singular or ill-conditioned (condition number {float(cond.max()):.1e}) for "
            f"{int(bad.sum())} example(s), e.g. at a non-isolated minimum; using least squares",
            RuntimeWarning,
            stacklevel=2,
        )
        w = torch.where(bad.reshape(B, 1, 1), torch.linalg.lstsq(A, rhs).solution, w)
    return w.reshape(B, T, N).transpose(0, 1)


# --------------------------------------------------------------------------- the module
@dataclass
class DiLQRInfo:
    """Per-example outcome of a :class:`DiLQR` solve.

    ``converged`` [B] (full-step ``||du|| < eps``), ``n_iter`` (iterations run), ``cost`` [B] (objective
    of the returned trajectory), ``du_norm`` [B] (last full-step control change) and ``reason`` (one
    sentence per example: converged, or why not and what was done with its gradient).
    """

    converged: Tensor
    n_iter: int
    cost: Tensor
    du_norm: Tensor
    reason: list[str]


class DiLQR(nn.Module):
    """Differentiable box-constrained iLQR with DiLQR's implicit backward (mpc.pytorch's ``MPC`` shapes).

    Solves ``min sum_t 1/2 tau_t' C_t tau_t + c_t' tau_t`` s.t. ``x_{t+1} = f_theta(x_t, u_t)``,
    ``x_0 = x_init`` and ``u_lower <= u <= u_upper``.  ``forward(x_init [B,n], cost, dynamics, u_init)``
    returns ``x [T,B,n]``, ``u [T,B,m]`` and a :class:`DiLQRInfo`.  ``cost`` is a :class:`QuadCost` or a
    callable ``tau [M, n+m] -> [M]`` (time-invariant, quadratised by autograd each iteration);
    ``dynamics`` is a :class:`Dynamics` / any row-wise callable ``f(x, u)``, or a :class:`LinDx`.

    ``grad_mode`` (theseus-style names):

    - ``"implicit"``: exact gradient of the converged fixed point (DiLQR); ``backward`` is ``"dense"`` or
      ``"fixed_point"``, both with a cost independent of ``max_iter``;
    - ``"diffmpc"``: the gradient of the last LQR with its linearisation point held fixed (Amos et al.
      2018, mpc.pytorch): the first term of the Neumann series of ``(I - J_tau)^{-1}``;
    - ``"unroll"``: autodiff through every iteration (each LQR step with the analytic backward, the
      linearisations with ``create_graph``), starting from the initial rollout held fixed;
    - ``"none"``: no autograd graph at all (the outputs are detached).

    Gradients reach the dynamics parameters, ``C``, ``c`` and ``x_init`` (not the bounds).  Examples
    that do not converge are reported in ``info.reason``; with ``exit_unconverged`` a ``RuntimeError``
    is raised, else with ``detach_unconverged`` (implicit/diffmpc) they are detached with a warning.
    ``u_reg > 0`` adds ``u_reg * I`` to ``C_uu`` (and so to every ``Q_uu``), which changes the problem.
    ``verbose``: -1 silent, 0 warnings, 1 a summary line per solve.
    """

    def __init__(
        self,
        n_state: int,
        n_ctrl: int,
        T: int,
        u_lower: float | Tensor | None = None,
        u_upper: float | Tensor | None = None,
        max_iter: int = 50,
        eps: float = 1e-7,
        grad_mode: str = "implicit",
        backward: str = "dense",
        linesearch_decay: float = 0.2,
        max_linesearch_iter: int = 10,
        exit_unconverged: bool = False,
        detach_unconverged: bool = True,
        u_reg: float = 0.0,
        fp_max_iter: int = 50,
        fp_tol: float = 1e-8,
        cond_max: float = 1e12,
        verbose: int = 0,
    ) -> None:
        super().__init__()
        n_state, n_ctrl, T, max_iter, max_linesearch_iter, fp_max_iter = (
            check_scalar(value, name, "int", min=1) for name, value in (
                ("n_state", n_state), ("n_ctrl", n_ctrl), ("T", T), ("max_iter", max_iter),
                ("max_linesearch_iter", max_linesearch_iter), ("fp_max_iter", fp_max_iter)))
        check_choice(grad_mode, "grad_mode", GRAD_MODES)
        check_choice(backward, "backward", BACKWARDS)
        linesearch_decay = check_scalar(linesearch_decay, "linesearch_decay", "real", min=0.0, max=1.0,
                                        inclusive="neither")
        eps, u_reg, fp_tol = (check_scalar(value, name, "real", min=0.0)
                              for name, value in (("eps", eps), ("u_reg", u_reg), ("fp_tol", fp_tol)))
        cond_max = check_scalar(cond_max, "cond_max", "real", min=0.0, inclusive="neither", allow_inf=True)
        exit_unconverged = check_bool(exit_unconverged, "exit_unconverged")
        detach_unconverged = check_bool(detach_unconverged, "detach_unconverged")
        verbose = check_choice(verbose, "verbose", (-1, 0, 1))
        if (u_lower is None) != (u_upper is None):
            raise ValueError("give both u_lower and u_upper, or neither")
        self.n_state, self.n_ctrl, self.T = n_state, n_ctrl, T
        self.u_lower, self.u_upper = u_lower, u_upper
        self.max_iter, self.eps = max_iter, eps
        self.grad_mode, self.backward = grad_mode, backward
        self.linesearch_decay, self.max_linesearch_iter = linesearch_decay, max_linesearch_iter
        self.exit_unconverged, self.detach_unconverged = exit_unconverged, detach_unconverged
        self.u_reg, self.fp_max_iter, self.fp_tol, self.cond_max = u_reg, fp_max_iter, fp_tol, cond_max
        self.verbose = verbose

    # -- input checking -------------------------------------------------------------------------
    def _check_x_init(self, x_init: Tensor) -> None:
        check_instance(x_init, "x_init", Tensor, "a torch tensor")
        if x_init.dim() != 2 or x_init.shape[1] != self.n_state or x_init.shape[0] == 0:
            raise ValueError(f"x_init must have shape [batch, {self.n_state}], got {tuple(x_init.shape)}")
        if not x_init.is_floating_point():
            raise TypeError(f"x_init must be a floating tensor, got {x_init.dtype}")
        if not bool(torch.isfinite(x_init.detach()).all()):
            raise ValueError("x_init must contain only finite values, got NaN or inf")

    def _u_init(self, u_init: Tensor | None, B: int, like: Tensor) -> Tensor:
        shape = (self.T, B, self.n_ctrl)
        if u_init is None:
            return like.new_zeros(shape)
        check_instance(u_init, "u_init", Tensor, "a torch tensor or None")
        u = u_init.detach().to(like)
        if u.dim() == 2:
            u = u.unsqueeze(1)
        if u.dim() != 3 or u.shape[0] != self.T or u.shape[2] != self.n_ctrl or u.shape[1] not in (1, B):
            raise ValueError(f"u_init must have shape [{self.T}, {B}, {self.n_ctrl}], got {tuple(u_init.shape)}")
        if not bool(torch.isfinite(u).all()):
            raise ValueError("u_init must contain only finite values, got NaN or inf")
        return u.expand(shape).clone()

    def _cost_functions(self, cost, B: int, like: Tensor):
        n, N = self.n_state, self.n_state + self.n_ctrl
        reg = like.new_zeros(N, N)
        reg[n:, n:] = self.u_reg * torch.eye(self.n_ctrl, dtype=like.dtype, device=like.device)
        if isinstance(cost, QuadCost) or (isinstance(cost, tuple) and len(cost) == 2):
            C, c = expand_cost(cost[0], cost[1], self.T, B, N)
            for name, t in (("QuadCost.C", C), ("QuadCost.c", c)):
                if t.dtype != like.dtype:
                    raise TypeError(f"{name} has dtype {t.dtype} but x_init has {like.dtype}; use one dtype")
                if not bool(torch.isfinite(t.detach()).all()):
                    raise ValueError(f"{name} must contain only finite values, got NaN or inf")
            if self.u_reg > 0:
                try:
                    check_control_pd(C, n)
                except ValueError:
                    warnings.warn(
                        f"DiLQR: C_uu is not positive definite; solving the regularised problem with "
                        f"C_uu + {self.u_reg:g} I instead",
                        RuntimeWarning,
                        stacklevel=4,
                    )
                C = C + reg
            check_control_pd(C, n)
            Cd, cd = C.detach(), c.detach()

            def quad(tau, graph=False):
                return (C, c) if graph else (Cd, cd)

            def total(tau):
                quad_form = (tau.unsqueeze(-2) @ Cd @ tau.unsqueeze(-1)).squeeze(-1).squeeze(-1)
                return (0.5 * quad_form + (cd * tau).sum(-1)).sum(0)

            return quad, total
        if not callable(cost):
            raise TypeError(f"cost must be a QuadCost(C, c) or a callable tau -> cost, got {type(cost).__name__}")

        def quad(tau, graph=False):
            rows = tau.reshape(-1, N)
            with torch.enable_grad():
                if not rows.requires_grad:
                    rows = rows.detach().requires_grad_(True)
                (g1,) = torch.autograd.grad(cost(rows).sum(), rows, create_graph=True)
                H = _row_jacobian(g1, rows, create_graph=graph)
            if not graph:
                g1, H, rows = g1.detach(), H.detach(), rows.detach()
            c = g1 - (H @ rows.unsqueeze(-1)).squeeze(-1)
            return H.reshape(self.T, B, N, N) + reg, c.reshape(self.T, B, N)

        def total(tau):
            value = cost(tau.reshape(-1, N)).reshape(self.T, B).sum(0)
            return value + 0.5 * self.u_reg * (tau[..., n:] ** 2).sum((0, 2))

        return quad, total

    def _dynamics_functions(self, dynamics, B: int, like: Tensor):
        n, N = self.n_state, self.n_state + self.n_ctrl
        if isinstance(dynamics, tuple) and not isinstance(dynamics, LinDx) and len(dynamics) == 2:
            dynamics = LinDx(*dynamics)  # e.g. mpc.pytorch's own LinDx
        if isinstance(dynamics, LinDx):
            F, f = expand_lin_dx(dynamics.F, dynamics.f, self.T, B, n, N)
            for name, t in (("LinDx.F", F), ("LinDx.f", f)):
                if t.dtype != like.dtype:
                    raise TypeError(f"{name} has dtype {t.dtype} but x_init has {like.dtype}; use one dtype")
                if not bool(torch.isfinite(t.detach()).all()):
                    raise ValueError(f"{name} must contain only finite values, got NaN or inf")
            Fd, fd = F.detach(), f.detach()

            def step(t, x, u):
                return (Fd[t] @ torch.cat((x, u), -1).unsqueeze(-1)).squeeze(-1) + fd[t]

            return step, lambda tau: Fd, lambda tau, graph: (F, f) if graph else (Fd, fd)
        if not callable(dynamics):
            raise TypeError(f"dynamics must be a Dynamics module, a callable f(x, u) or a LinDx, got {type(dynamics)}")
        if isinstance(dynamics, nn.Module):
            for name, p in dynamics.named_parameters():
                if not bool(torch.isfinite(p.detach()).all()):
                    raise ValueError(f"dynamics parameter {name!r} must contain only finite values, got NaN or inf")
        probe = dynamics(like[:1].detach(), like.new_zeros(1, self.n_ctrl))
        if not isinstance(probe, Tensor) or tuple(probe.shape) != (1, n):
            got = getattr(probe, "shape", probe)
            raise ValueError(f"dynamics(x [B,{n}], u [B,{self.n_ctrl}]) must return [B,{n}], got {got}")

        def step(t, x, u):
            return dynamics(x, u)

        def lin(tau, graph=False):
            return linearize(dynamics, tau, n, create_graph=graph)

        return step, lambda tau: lin(tau)[0], lin

    # -- forward ------------------------------------------------------------------------------
    def forward(self, x_init: Tensor, cost, dynamics, u_init: Tensor | None = None) -> tuple[Tensor, Tensor, DiLQRInfo]:
        """Solve the control problem from ``x_init`` [B, n]; see the class docstring."""
        self._check_x_init(x_init)
        B, n = x_init.shape
        quad, total = self._cost_functions(cost, B, x_init)
        step, lin_nograd, lin = self._dynamics_functions(dynamics, B, x_init)
        lo = expand_bounds(self.u_lower, self.T, B, self.n_ctrl, x_init, "u_lower")
        hi = expand_bounds(self.u_upper, self.T, B, self.n_ctrl, x_init, "u_upper")
        if lo is not None and bool((lo > hi).any()):
            raise ValueError("u_lower must not exceed u_upper")
        u0 = self._u_init(u_init, B, x_init)
        if lo is not None:
            u0 = torch.maximum(torch.minimum(u0, hi), lo)
        need_grad = torch.is_grad_enabled() and self.grad_mode != "none"
        res = ilqr_solve(
            x_init.detach(), u0, step, lin_nograd, lambda tau: quad(tau), total, lo, hi, self.max_iter, self.eps,
            self.linesearch_decay, self.max_linesearch_iter, keep_iterates=need_grad and self.grad_mode == "unroll",
        )
        info = self._report(res, need_grad)
        tau_star = torch.cat((res.x, res.u), -1)
        if not need_grad:
            out = tau_star
        elif self.grad_mode == "unroll":
            out = res.iterates[0]
            for nxt in res.iterates[1:]:
                C, c = quad(out, graph=True)
                F, f = lin(out, graph=True)
                free = None if lo is None else ~active_bounds(nxt[..., n:], lo, hi)
                out = LQRFunction.apply(x_init, C, c, F, f, nxt, free)
        else:
            C, c = quad(tau_star, graph=True)
            F, f = lin(tau_star, graph=True)
            free = None if lo is None else ~active_bounds(res.u, lo, hi)
            adjoint = None
            if self.grad_mode == "implicit" and not isinstance(dynamics, tuple) and self.T > 1:
                adjoint = self._adjoint(dynamics, tau_star, C.detach(), c.detach(), F.detach(), free)
            out = LQRFunction.apply(x_init, C, c, F, f, tau_star, free, adjoint)
            if self.detach_unconverged and not bool(res.converged.any()):
                out = out.detach()
            elif self.detach_unconverged and not bool(res.converged.all()):
                out = torch.where(res.converged.reshape(1, B, 1), out, out.detach())
        return out[..., :n], out[..., n:], info

    def _adjoint(self, dynamics, tau, C, c, F, free):
        def adjoint(g: Tensor, factor: RiccatiFactor) -> Tensor:
            return implicit_cotangent(
                g, dynamics, tau, C, c, F, self.n_state, free, self.backward, self.fp_max_iter, self.fp_tol,
                self.cond_max, factor,
            )

        return adjoint

    def _report(self, res, need_grad: bool) -> DiLQRInfo:
        bad = [int(b) for b in torch.nonzero(~res.converged).flatten()]
        reason = ["converged"] * len(res.converged)
        for b in bad:
            du = float(res.du_norm[b])
            reason[b] = f"not converged after {res.n_iter} iterations (||du|| = {du:.2e} >= eps = {self.eps:g})"
        if bad and self.exit_unconverged:
            raise RuntimeError(f"DiLQR: examples {bad} did not converge to a fixed point: {reason[bad[0]]}")
        exact = need_grad and self.grad_mode in ("implicit", "diffmpc")
        if bad and exact:
            what = "detached (zero gradient)" if self.detach_unconverged else "given the gradient at the last iterate"
            for b in bad:
                reason[b] += "; " + what
            if self.verbose >= 0:
                warnings.warn(
                    f"DiLQR: {len(bad)} of {len(reason)} examples did not converge to a fixed point "
                    f"(max ||du|| = {float(res.du_norm.max()):.2e}, eps = {self.eps:g}); their outputs are {what}. "
                    "Raise max_iter or eps, or set exit_unconverged=True to raise",
                    RuntimeWarning,
                    stacklevel=5,  # the caller of DiLQR(...)
                )
        if self.verbose >= 1:
            print(f"DiLQR: {res.n_iter} iterations, {len(reason) - len(bad)}/{len(reason)} converged, "
                  f"mean cost {float(res.cost.mean()):.4e}, max ||du|| {float(res.du_norm.max()):.2e}")
        return DiLQRInfo(res.converged, res.n_iter, res.cost, res.du_norm, reason)


# --------------------------------------------------------------------------- a test problem
def pendulum_problem(
    T: int, batch: int, seed: Seed | torch.Generator = 0, dtype: torch.dtype = torch.float64
) -> tuple[Tensor, QuadCost, Tensor]:
    """A pendulum swing-up problem for benchmarks: initial states [batch, 3], the official cost and a
    random target control sequence [T, batch, 1] (``sum (u - target)^2`` is a loss to backpropagate)."""
    T, batch = check_scalar(T, "T", "int", min=1), check_scalar(batch, "batch", "int", min=1)
    gen = torch_generator(seed)
    x0 = sample_pendulum_states(batch, gen, dtype)
    target = torch.randn(T, batch, 1, generator=gen, dtype=dtype)
    return x0, pendulum_cost(T, batch, dtype=dtype), target
