"""DiLQR against mpc.pytorch (locuslab, the differentiable MPC of Amos et al. 2018) on the pendulum swing-up.

Both solve the same box-free and torque-limited (|u| <= 2) swing-ups in float64 (our ``PendulumDynamics``, handed
to mpc.pytorch with its analytic Jacobian as ``grad_input``, ``GradMethods.ANALYTIC``; the official cost; eps
1e-10 for the gradient rows), from the model theta = (g, m, l) = (15, 3, 0.5), with the loss
``sum (u* - u_target)^2`` for a random target.  The *agree* rows check that the two solvers return the same
converged controls and, on a linear-quadratic problem (``LinDx`` dynamics, where both gradients are exact),
the same gradients wrt ``C``, ``c``, ``F``, ``f`` and ``x_init``.

**Gradient error** (relative, against central finite differences of tight solves of ours, h = 1e-5) wrt
theta, T = 20, batch 8: DiLQR differentiates the converged fixed point by the implicit function theorem and
matches the finite differences to 8e-12 without bounds and 5e-8 with the torque limit active, while
mpc.pytorch holds the last linearisation point fixed (the first term of the Neumann series of
``(I - J_tau)^{-1}``) and is off by 0.25% without bounds and 17% with them: the gap is in the method, not in
the tolerance.  With the limit active its controls agree with ours only to 1.4e-4, because its box-constrained
QP (pnqp) stops once its Newton step is below 1e-4; that row allows 1e-3.

**Time** (one thread, its CPU time, medians of interleaved repeats: 15 forward, 60 backward; eps 1e-7, at most 100
iterations): the forward solve that builds the graph takes 0.44x mpc.pytorch's (one batched linearisation and
Riccati recursion per iteration, where mpc.pytorch also splits and re-joins the best iterate example by example).
The backward is *behind*, 1.2x mpc.pytorch's: the exact gradient factors the Riccati recursion once more, solves it
for all ``T (n + m)`` unit cotangents and inverts the dense adjoint system ``I - J_tau`` of that size per example,
which mpc.pytorch's approximate backward (one LQR backward) skips. ``backward="fixed_point"`` replaces the inverse
by a few LQR solves, but took 1.7x the dense backward on this problem because the Neumann series needs many terms.
mpc 0.0.6 runs with NumPy 2 and the installed PyTorch without shims; with bounds it triggers PyTorch's deprecation
warning for uint8 mask indexing (``mpc/util.py``, ``bdiag``; harmless, silenced here), and it prints convergence
notes unless ``verbose=-1``.
"""

from __future__ import annotations

import statistics
import time
import warnings

import torch

from icml25.control.dilqr import DiLQR, PendulumDynamics, pendulum_problem
from icml25.control.lqr import QuadCost
from icml25.harness.bench import Agreement, Comparison
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.utils.random import torch_generator

PEERS = {"mpc": "mpc.pytorch"}

D = torch.float64
THETA = (15.0, 3.0, 0.5)
TORQUE = 2.0
H = 1e-5


class _PeerDynamics(torch.nn.Module):
    """Our pendulum with mpc.pytorch's interface: ``forward(x, u)`` and ``grad_input(x, u) -> (R, S)``."""

    def __init__(self, dynamics: PendulumDynamics) -> None:
        super().__init__()
        self.dynamics = dynamics

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return self.dynamics(x, u)

    def grad_input(self, x: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.dynamics.jacobian(x, u)


def _ours(T: int, bounds: bool, eps: float, max_iter: int) -> DiLQR:
    kw = {"u_lower": -TORQUE, "u_upper": TORQUE} if bounds else {}
    return DiLQR(3, 1, T, max_iter=max_iter, eps=eps, verbose=-1, **kw)


def _peer(T: int, bounds: bool, eps: float, max_iter: int):
    from mpc import mpc

    kw = {"u_lower": -TORQUE, "u_upper": TORQUE} if bounds else {}
    return mpc.MPC(3, 1, T, lqr_iter=max_iter, eps=eps, back_eps=eps, grad_method=mpc.GradMethods.ANALYTIC,
                   exit_unconverged=False, detach_unconverged=False, verbose=-1, **kw)


def _solve(which: str, T: int, x0, cost: QuadCost, theta, bounds: bool, eps: float = 1e-10, max_iter: int = 300):
    """``(dynamics, u)`` of one solve by ``which`` ("ours" or "peer") with a fresh model ``theta``."""
    from mpc import mpc

    dyn = PendulumDynamics(*theta, dtype=D)
    if which == "ours":
        _, u, _ = _ours(T, bounds, eps, max_iter)(x0, cost, dyn)
    else:
        _, u, _ = _peer(T, bounds, eps, max_iter)(x0, mpc.QuadCost(*cost), _PeerDynamics(dyn))
    return dyn, u


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def _gradient_rows(T: int, B: int, seed: int, bounds: bool) -> list:
    """Gradient wrt theta of both against central differences; the forward solutions must agree."""
    x0, cost, target = pendulum_problem(T, B, seed)
    task = f"pendulum T={T} B={B}" + (f", |u| <= {TORQUE:g}" if bounds else "")
    grads, controls = {}, {}
    for which in ("ours", "peer"):
        dyn, u = _solve(which, T, x0, cost, THETA, bounds)
        ((u - target) ** 2).sum().backward()
        grads[which], controls[which] = dyn.params.grad.detach().clone(), u.detach()
    fd = torch.zeros(3, dtype=D)
    with torch.no_grad():
        for i in range(3):
            loss = []
            for s in (H, -H):
                theta = list(THETA)
                theta[i] += s
                loss.append(float(((_solve("ours", T, x0, cost, theta, bounds)[1] - target) ** 2).sum()))
            fd[i] = (loss[0] - loss[1]) / (2 * H)
    # mpc.pytorch's box-constrained QP (pnqp) stops once its Newton step is below 1e-4
    return [Agreement(task, "converged controls u*", float((controls["ours"] - controls["peer"]).abs().max()),
                      tolerance=1e-3 if bounds else 1e-6),
            Comparison(task, "gradient wrt theta: relative error vs central differences", _rel(grads["ours"], fd),
                       _rel(grads["peer"], fd), better="lower")]


def _lqr_agreement(T: int, B: int, seed: int) -> Agreement:
    """Linear dynamics: one LQR, where both gradients are exact; largest difference of every gradient."""
    from mpc import mpc

    n, m = 3, 1
    g = torch_generator(seed)
    A = torch.eye(n, dtype=D) + 0.1 * torch.randn(n, n, generator=g, dtype=D)
    Bm = torch.randn(n, m, generator=g, dtype=D)
    F0 = torch.cat((A, Bm), 1).expand(T - 1, B, n, n + m).clone()
    f0 = 0.1 * torch.randn(T - 1, B, n, generator=g, dtype=D)
    L = torch.randn(n + m, n + m, generator=g, dtype=D)
    C0 = (L @ L.T + 0.5 * torch.eye(n + m, dtype=D)).expand(T, B, n + m, n + m).clone()
    c0 = torch.randn(T, B, n + m, generator=g, dtype=D)
    x0 = torch.randn(B, n, generator=g, dtype=D)
    target = torch.randn(T, B, m, generator=g, dtype=D)
    grads = {}
    for which in ("ours", "peer"):
        leaves = [t.clone().requires_grad_() for t in (C0, c0, F0, f0, x0)]
        C, c, F, f, x = leaves
        if which == "ours":
            _, u, _ = DiLQR(n, m, T, max_iter=5, eps=1e-10, verbose=-1)(x, QuadCost(C, c), mpc.LinDx(F, f))
        else:
            solver = mpc.MPC(n, m, T, lqr_iter=5, eps=1e-10, exit_unconverged=False, verbose=-1)
            _, u, _ = solver(x, mpc.QuadCost(C, c), mpc.LinDx(F, f))
        ((u - target) ** 2).sum().backward()
        grads[which] = [u.detach()] + [t.grad for t in leaves]
    diff = max(float(((a - b).abs().max()) / b.abs().max().clamp_min(1e-12))
               for a, b in zip(grads["ours"], grads["peer"], strict=True))
    return Agreement(f"linear-quadratic T={T} B={B}", "u* and gradients wrt C, c, F, f, x_init (relative)", diff,
                     tolerance=1e-8)


def _time_rows(T: int, B: int, seed: int, repeats: int) -> list[Comparison]:
    """Forward (one solve that builds the graph) and backward times, eps 1e-7 and at most 100 iterations.

    CPU time of this thread (torch runs on it alone under ``single_thread``), medians of interleaved repeats,
    so that other processes on a loaded machine do not enter the ratio; the backward gets 4x the repeats.
    """
    from mpc import mpc

    x0, cost, target = pendulum_problem(T, B, seed)
    task = f"pendulum T={T} B={B}"
    ours_dyn, peer_dyn = PendulumDynamics(*THETA, dtype=D), PendulumDynamics(*THETA, dtype=D)
    ours, peer = _ours(T, False, 1e-7, 100), _peer(T, False, 1e-7, 100)
    peer_cost, peer_model = mpc.QuadCost(*cost), _PeerDynamics(peer_dyn)
    forward = interleaved_seconds({"ours": lambda: ours(x0, cost, ours_dyn),
                                   "peer": lambda: peer(x0, peer_cost, peer_model)},
                                  repeats=repeats, warmup=1, clock=time.thread_time)
    ours_loss = ((ours(x0, cost, ours_dyn)[1] - target) ** 2).sum()
    peer_loss = ((peer(x0, peer_cost, peer_model)[1] - target) ** 2).sum()
    backward = interleaved_seconds({"ours": lambda: ours_loss.backward(retain_graph=True),
                                    "peer": lambda: peer_loss.backward(retain_graph=True)},
                                   repeats=4 * repeats, warmup=2, clock=time.thread_time)
    return [Comparison(task, f"{what} time (median thread CPU s)", statistics.median(times["ours"]),
                       statistics.median(times["peer"]), "lower", unit="s")
            for what, times in (("forward solve", forward), ("backward", backward))]


def bench(size: str, seed: int) -> list:
    T, B, repeats = (8, 2, 3) if size == "smoke" else (20, 8, 15)
    rows = []
    with single_thread(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="indexing with dtype torch.uint8", category=UserWarning)
        rows += _gradient_rows(T, B, seed, bounds=False)
        if size == "full":
            rows += _gradient_rows(T, B, seed, bounds=True)
        rows.append(_lqr_agreement(T, B, seed))
        rows += _time_rows(T, B, seed, repeats)
    return rows
