"""Reproduction of DiLQR (Wang, Loewen, Forbes, Gopaluni & Pan, ICML 2025, arXiv 2506.17473) on the pendulum.

The user guide is docs/papers/dilqr.md.  Everything is synthetic: expert trajectories come from our own
iLQR with the true model.  Three parts:

1. **Backward cost.** Pendulum iLQR run for exactly ``K`` iterations (no early stop), batch 8, float64;
   the median wall time of ``.backward()`` (interleaved repeats after a warm-up, same process) for DiLQR's
   implicit backward against unrolled autodiff, over the (T, K) grid; the speed-up table goes to the
   metrics and the figure.  Also the forward overhead of the implicit mode against a plain no-graph
   iLQR and the size of the autograd graph (a memory proxy) as ``K`` grows.
2. **Exact gradients.** Per seed, 4 swing-ups from the initial model theta = (15, 3, 0.5):
   the gradient of ``sum (u* - u_expert)^2`` wrt theta (and, along random directions, wrt C, c and
   x_init) against central finite differences of tight (eps 1e-10) solves; DiffMPC's gradient and
   unrolled autodiff (K = 100) in the same run.  Examples whose nominal solve does not converge (DiLQR
   detaches them) are left out of the loss and counted in the metrics.
3. **Imitation.** Per seed, 16 training and 16 test expert trajectories (T = 20, no torque limit, so no
   bound is active); theta learned from (15, 3, 0.5) with RMSprop (alpha 0.5) on log theta for 60 steps
   with DiLQR's gradient and with DiffMPC's; an MLP policy (2 x 128, Adam 1e-3) trained for the same
   number of steps is the neural baseline.  The pendulum depends on theta only through a = 3g/(2l) and
   b = 3/(m l^2), so the model error is also measured in (a, b).

All three seeds' imitation problems are solved in one batch (one model per seed, see
``SeedBatchedPendulum``); RMSprop is elementwise, so this equals three separate runs.  Torch runs on
one intra-op thread at every scale (``harness.threads.single_thread``); both methods are timed alike.
"""

from __future__ import annotations

import time
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

from icml25.control.dilqr import DiLQR, PendulumDynamics, pendulum_cost, pendulum_problem, sample_pendulum_states
from icml25.control.lqr import QuadCost
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_panel, ratio_panel
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.utils.random import seeded, torch_generator

RAW_THETA_TEXT = "imitation: DiLQR's final ||theta - theta*|| <= DiffMPC's (mean over seeds)"
MODEL_TEXT = "imitation: DiLQR's final model error in the identifiable (a, b) <= DiffMPC's (mean over seeds)"

PAPER = Paper(
    id="dilqr",
    title="DiLQR: Differentiable Iterative Linear Quadratic Regulator via Implicit Differentiation",
    module="icml25.control.dilqr",
    anchors=("mpc.pytorch", "josef-w/Differentiable-iLQR", "theseus-ai"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,  # an MLP policy is trained as the neural baseline
    extras=("torch",),
    known_misses={
        MODEL_TEXT: "a tie at 60 steps: without active torque bounds DiffMPC's gradient is within 0.2% of the "
                    "exact one, so both runs take the same path",
        RAW_THETA_TEXT: "theta is not identifiable (only a = 3g/(2l) and b = 3/(m l^2) are): where a run lands on "
                        "the curve of perfect imitators depends on the optimiser's path",
    },
)

D = torch.float64
THETA_TRUE = (10.0, 1.0, 1.0)
THETA_INIT = (15.0, 3.0, 0.5)
AB_TRUE = (15.0, 3.0)  # a = 3g/(2l), b = 3/(m l^2): what the pendulum identifies
TORQUE = 2.0


# --------------------------------------------------------------------------- 1. backward cost
def count_graph_nodes(t: torch.Tensor) -> int:
    """Autograd nodes reachable from ``t`` (what a backward pass keeps alive)."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    return len(seen)


def _solver(T: int, K: int, mode: str) -> DiLQR:
    """DiLQR run for exactly ``K`` iterations (no early stop), as the timing protocol needs."""
    return DiLQR(3, 1, T, max_iter=K, eps=0.0, grad_mode=mode, exit_unconverged=False, detach_unconverged=False,
                 verbose=-1)


def _timed_solve(solver: DiLQR, x0: torch.Tensor, cost: QuadCost, dyn: PendulumDynamics) -> tuple:
    """``(seconds, u, info)`` of one solve (the forward that builds the graph)."""
    out = {}

    def solve() -> None:
        out["result"] = solver(x0, cost, dyn)

    seconds = median_seconds(solve, repeats=1)
    _, u, info = out["result"]
    return seconds, u, info


def backward_times(T_list: tuple[int, ...], K_list: tuple[int, ...], batch: int, repeats: int, seed: int) -> list[dict]:
    """Median wall time of ``.backward()`` through the pendulum iLQR for every ``(T, K, mode)``.

    One forward per combination builds the graph of ``sum (u - u_target)^2`` wrt ``theta = (g, m, l)``;
    after one warm-up backward each, the backward passes (``retain_graph``) take turns over ``repeats``
    rounds so that load bursts hit all combinations alike.
    """
    rows, losses = [], {}
    for T in T_list:
        x0, cost, target = pendulum_problem(T, batch, seed)
        for K in K_list:
            for mode in ("implicit", "unroll"):
                forward, u, info = _timed_solve(_solver(T, K, mode), x0, cost, PendulumDynamics(dtype=D))
                loss = ((u - target) ** 2).sum()
                loss.backward(retain_graph=True)  # the warm-up
                key = f"{T},{K},{mode}"
                losses[key] = partial(loss.backward, retain_graph=True)
                rows.append({"T": T, "K": K, "mode": mode, "n_iter": info.n_iter, "forward_seconds": forward,
                             "key": key})
    times = interleaved_seconds(losses, repeats, warmup=0)
    return [{**{k: v for k, v in r.items() if k != "key"}, "backward_seconds": float(np.median(times[r["key"]]))}
            for r in rows]


def forward_times(T: int, K: int, batch: int, repeats: int, seed: int) -> dict:
    """Median forward wall time of ``grad_mode="implicit"`` against a plain no-graph iLQR (``"none"``)."""
    x0, cost, _ = pendulum_problem(T, batch, seed)
    dyn = PendulumDynamics(dtype=D)
    solvers = {mode: _solver(T, K, mode) for mode in ("none", "implicit")}
    times = interleaved_seconds({m: partial(s, x0, cost, dyn) for m, s in solvers.items()}, repeats, warmup=1)
    return {f"{mode}_seconds": float(np.median(t)) for mode, t in times.items()}


def backward_cost(run: Run, seed: int) -> tuple[dict, dict]:
    """Part 1: the backward-time grid, the forward overhead and the graph sizes; and the reference grid point."""
    T_list = run.pick(smoke=(5,), quick=(10, 20), full=(10, 20, 40))
    K_list = run.pick(smoke=(2, 4), quick=(5, 40), full=(5, 10, 20, 40, 100, 200))
    rows = backward_times(T_list, K_list, batch=8, repeats=run.pick(smoke=1, quick=7, full=7), seed=seed)
    t = {(r["T"], r["K"], r["mode"]): r["backward_seconds"] for r in rows}
    T_ref = 20 if 20 in T_list else max(T_list)
    K_lo, K_hi = min(K_list), max(K_list)
    speedup = {f"T={T},K={K}": t[T, K, "unroll"] / t[T, K, "implicit"] for T in T_list for K in K_list}
    fwd = forward_times(T_ref, K_lo, batch=8, repeats=run.pick(smoke=1, quick=10, full=10), seed=seed)
    x0 = sample_pendulum_states(8, seed)
    nodes = {}
    for mode in ("implicit", "unroll"):
        for K in (K_lo, K_hi):
            _, u, _ = _solver(T_ref, K, mode)(x0, pendulum_cost(T_ref, 8), PendulumDynamics(dtype=D))
            nodes[f"{mode},K={K}"] = count_graph_nodes(u)
    slope_K = {mode: {f"T={T}": loglog_slope(K_list, [t[T, K, mode] for K in K_list]) for T in T_list}
               for mode in ("implicit", "unroll")}
    slope_T = ({mode: {f"K={K}": loglog_slope(T_list, [t[T, K, mode] for T in T_list]) for K in K_list}
                for mode in ("implicit", "unroll")} if len(T_list) > 1 else None)
    return {
        "timing": rows,
        "speedup_unroll_over_implicit": speedup,
        "time_slope_in_K": slope_K,
        "time_slope_in_T": slope_T,
        "implicit_time_ratio_Khi_over_Klo": t[T_ref, K_hi, "implicit"] / t[T_ref, K_lo, "implicit"],
        "unroll_time_ratio_Khi_over_Klo": t[T_ref, K_hi, "unroll"] / t[T_ref, K_lo, "unroll"],
        "forward_seconds": fwd,
        "forward_time_ratio_implicit_over_nograd": fwd["implicit_seconds"] / fwd["none_seconds"],
        "graph_nodes": nodes,
    }, {"T_ref": T_ref, "K_lo": K_lo, "K_hi": K_hi}


def _claim_flat_backward(speed: dict, g: dict) -> Claim:
    flat = speed["implicit_time_ratio_Khi_over_Klo"]
    return Claim(f"implicit backward time flat in K (T={g['T_ref']}, K={g['K_hi']} vs K={g['K_lo']})",
                 criterion="t(K_hi) <= 1.5 t(K_lo)", measured=flat, baseline=1.5, holds=bool(flat <= 1.5),
                 paper="backward cost independent of the number of iterations (abstract)", kind="finding")


def _claim_unroll_grows(speed: dict, g: dict) -> Claim:
    growth = speed["unroll_time_ratio_Khi_over_Klo"]
    return Claim(f"unrolled autodiff backward time grows with K (T={g['T_ref']}, K={g['K_hi']} vs K={g['K_lo']})",
                 criterion="t(K_hi) >= 4 t(K_lo)", measured=growth, baseline=4.0, holds=bool(growth >= 4.0),
                 paper=None, kind="finding")


def _claim_speedup(speed: dict, g: dict) -> Claim:
    ratio = speed["speedup_unroll_over_implicit"][f"T={g['T_ref']},K={g['K_hi']}"]
    return Claim(f"backward speed-up of DiLQR over unrolled autodiff (T={g['T_ref']}, K={g['K_hi']})",
                 criterion="t_unroll / t_implicit >= 5 (one CPU thread)", measured=ratio, baseline=5.0,
                 holds=bool(ratio >= 5.0), paper="21x-128x (abstract; GPU, longer horizons)", kind="finding")


def _claim_speedup_grows(speed: dict, g: dict) -> Claim:
    sp = speed["speedup_unroll_over_implicit"]
    hi, lo = sp[f"T={g['T_ref']},K={g['K_hi']}"], sp[f"T={g['T_ref']},K={g['K_lo']}"]
    return Claim(f"speed-up grows with K (T={g['T_ref']}: R(K={g['K_hi']}) / R(K={g['K_lo']}))",
                 criterion="R(K_hi) >= 3 R(K_lo)", measured=hi / lo, baseline=3.0, holds=bool(hi >= 3 * lo),
                 paper="speed-up grows with K and T (abstract)", kind="finding")


def _claim_slopes(speed: dict) -> Claim:
    slopes = speed["time_slope_in_K"]
    flat, linear = max(slopes["implicit"].values()), min(slopes["unroll"].values())
    return Claim("backward cost in K follows the complexity: flat for DiLQR, linear for unrolled autodiff",
                 criterion="fitted log-log slope of backward time against K over the whole K range, at every T: "
                           "DiLQR <= 0.2, unrolled autodiff >= 0.8",
                 measured=slopes["implicit"], baseline=slopes["unroll"], holds=bool(flat <= 0.2 and linear >= 0.8),
                 paper="implicit backward independent of K; unrolling costs time linear in K (Sec. 4)", kind="finding")


def _claim_forward_overhead(speed: dict, g: dict) -> Claim:
    ratio = speed["forward_time_ratio_implicit_over_nograd"]
    return Claim(f"implicit-mode forward within 1.3x of a no-graph iLQR (T={g['T_ref']}, K={g['K_lo']})",
                 criterion="t(implicit forward) / t(no-graph forward) <= 1.3", measured=ratio, baseline=1.3,
                 holds=bool(ratio <= 1.3), paper=None, kind="finding")


def _claim_constant_graph(speed: dict, g: dict) -> Claim:
    nodes = speed["graph_nodes"]
    imp_hi, imp_lo = nodes[f"implicit,K={g['K_hi']}"], nodes[f"implicit,K={g['K_lo']}"]
    unr_hi, unr_lo = nodes[f"unroll,K={g['K_hi']}"], nodes[f"unroll,K={g['K_lo']}"]
    return Claim("implicit backward graph does not grow with K; unrolled graph does",
                 criterion="autograd nodes: implicit equal at K_lo and K_hi, unrolled larger at K_hi",
                 measured=imp_hi, baseline=unr_hi, holds=bool(imp_hi == imp_lo and unr_hi > unr_lo),
                 paper="constant memory in K (abstract)", kind="check")


# --------------------------------------------------------------------------- 2. exact gradients
def _rel(a: torch.Tensor | float, b: torch.Tensor | float) -> float:
    """``||a - b|| / ||b||`` (0 when both vanish, e.g. every control pinned at a bound)."""
    a, b = torch.as_tensor(a, dtype=D), torch.as_tensor(b, dtype=D)
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def gradient_errors(seed: int, T: int, B: int, unroll_K: int, bounds: bool) -> dict:
    """Relative errors of DiLQR / DiffMPC / unroll gradients against central differences (h = 1e-5)."""
    kw = {"u_lower": -TORQUE, "u_upper": TORQUE} if bounds else {}
    gen = torch_generator(1000 + seed)
    x0 = sample_pendulum_states(B, gen)
    C, c = pendulum_cost(T, B)
    with torch.no_grad():
        expert = DiLQR(3, 1, T, max_iter=300, eps=1e-10, grad_mode="none", **kw)
        u_exp = expert(x0, QuadCost(C, c), PendulumDynamics(*THETA_TRUE, dtype=D))[1]

    keep = torch.ones(B, dtype=torch.bool)  # examples in the loss: those whose nominal solve converged

    def solve(theta, Cv, cv, xv, mode, u_init=None, **extra):
        dyn = PendulumDynamics(*theta, dtype=D)
        solver = DiLQR(3, 1, T, grad_mode=mode, verbose=-1, **{"max_iter": 300, "eps": 1e-10, **kw, **extra})
        x, u, info = solver(xv, QuadCost(Cv, cv), dyn, u_init=u_init)
        return dyn, ((u - u_exp)[:, keep] ** 2).sum(), info, u

    Cg, cg, xg = C.clone().requires_grad_(), c.clone().requires_grad_(), x0.clone().requires_grad_()
    dyn, _, info, u_star = solve(THETA_INIT, Cg, cg, xg, "implicit")
    keep = info.converged.clone()  # an unconverged example is detached by design (zero gradient)
    ((u_star - u_exp)[:, keep] ** 2).sum().backward()
    h = 1e-5

    def fd(fn):
        with torch.no_grad():
            return (float(fn(h)) - float(fn(-h))) / (2 * h)

    fd_theta = torch.zeros(3, dtype=D)
    for i in range(3):
        def shifted(s, i=i):
            theta = list(THETA_INIT)
            theta[i] += s
            return solve(theta, C, c, x0, "none", u_star.detach())[1]

        fd_theta[i] = fd(shifted)
    dirs = torch_generator(2000 + seed)
    scale = C.diagonal(dim1=-2, dim2=-1).abs().sqrt()  # directions relative to the cost's own scale
    dC = torch.randn(C.shape, generator=dirs, dtype=D) * scale.unsqueeze(-1) * scale.unsqueeze(-2)
    dC = 0.5 * (dC + dC.transpose(-1, -2))
    dc = torch.randn(c.shape, generator=dirs, dtype=D)
    dx = torch.randn(x0.shape, generator=dirs, dtype=D)
    u0 = u_star.detach()
    fd_C = fd(lambda s: solve(THETA_INIT, C + s * dC, c, x0, "none", u0)[1])
    fd_c = fd(lambda s: solve(THETA_INIT, C, c + s * dc, x0, "none", u0)[1])
    fd_x = fd(lambda s: solve(THETA_INIT, C, c, x0 + s * dx, "none", u0)[1])
    dyn_d, loss_d, _, _ = solve(THETA_INIT, C, c, x0, "diffmpc")
    loss_d.backward()
    dyn_u, loss_u, _, _ = solve(THETA_INIT, C, c, x0, "unroll", max_iter=unroll_K, eps=0.0, detach_unconverged=False)
    loss_u.backward()
    return {
        "converged": int(info.converged.sum()),  # the others are left out of the loss
        "implicit_theta": _rel(dyn.params.grad, fd_theta),
        "diffmpc_theta": _rel(dyn_d.params.grad, fd_theta),
        "unroll_vs_implicit_theta": _rel(dyn_u.params.grad, dyn.params.grad),
        "implicit_C": _rel(float((Cg.grad * dC).sum()), fd_C),
        "implicit_c": _rel(float((cg.grad * dc).sum()), fd_c),
        "implicit_x_init": _rel(float((xg.grad * dx).sum()), fd_x),
        "grad_theta_implicit": dyn.params.grad.tolist(),
        "grad_theta_diffmpc": dyn_d.params.grad.tolist(),
        "grad_theta_fd": fd_theta.tolist(),
    }


def exact_gradients(run: Run) -> dict:
    """Part 2: per seed, gradient errors without and with the torque limit 2."""
    T, B = run.pick(smoke=8, quick=20, full=20), run.pick(smoke=2, quick=4, full=8)
    unroll_K = run.pick(smoke=20, quick=100, full=100)
    per_seed = {str(s): gradient_errors(s, T, B, unroll_K, bounds=False) for s in run.seeds}
    bounded = {str(s): gradient_errors(s, T, B, unroll_K, bounds=True) for s in run.seeds}
    errs = {k: [per_seed[str(s)][k] for s in run.seeds] for k in next(iter(per_seed.values())) if "grad" not in k}
    return {"T": T, "batch": B, "unroll_K": unroll_K, "unbounded": per_seed, "torque_bounded": bounded,
            "errors": errs}


def _claim_theta_gradient(grads: dict) -> Claim:
    worst = max(grads["errors"]["implicit_theta"])
    return Claim("DiLQR gradient wrt theta equals central finite differences (max over seeds)",
                 criterion="relative error <= 1e-4, every seed", measured=worst, baseline=None,
                 holds=bool(worst <= 1e-4), paper="exact gradient of the converged iLQR solution (Section 4)",
                 kind="finding")


def _claim_cost_gradient(grads: dict) -> Claim:
    errs = grads["errors"]
    worst = max(max(errs["implicit_C"]), max(errs["implicit_c"]), max(errs["implicit_x_init"]))
    return Claim("DiLQR gradient wrt C, c and x_init equals finite differences (random directions, max)",
                 criterion="relative error <= 1e-4, every seed and argument", measured=worst, baseline=None,
                 holds=bool(worst <= 1e-4), paper="exact gradients wrt the cost and the initial state (Section 4)",
                 kind="finding")


def _claim_unroll_converges(grads: dict) -> Claim:
    worst = max(grads["errors"]["unroll_vs_implicit_theta"])
    return Claim(f"unrolled autodiff (K={grads['unroll_K']}) converges to DiLQR's gradient (max over seeds)",
                 criterion="relative difference <= 1e-3, every seed", measured=worst, baseline=None,
                 holds=bool(worst <= 1e-3), paper=None, kind="finding")


def _claim_beats_diffmpc(grads: dict) -> Claim:
    errs = grads["errors"]
    relevant = [(i, d) for i, d in zip(errs["implicit_theta"], errs["diffmpc_theta"], strict=True) if d > 1e-3]
    beat = sum(i <= 0.1 * d for i, d in relevant)
    return Claim("DiLQR error <= 0.1 x DiffMPC error wherever DiffMPC's exceeds 1e-3 (seeds)",
                 criterion="every seed where DiffMPC's relative error exceeds 1e-3", measured=f"{beat}/{len(relevant)}",
                 baseline=min(errs["diffmpc_theta"]), holds=bool(beat == len(relevant)),
                 paper="DiffMPC's gradient is inexact, DiLQR's exact (Section 4)", kind="finding")


def _claim_bounded(grads: dict) -> Claim:
    b_imp = max(v["implicit_theta"] for v in grads["torque_bounded"].values())
    b_dm = min(v["diffmpc_theta"] for v in grads["torque_bounded"].values())
    return Claim("with the torque limit 2: DiLQR exact while DiffMPC's gradient is far off (worst/best seed)",
                 criterion="DiLQR <= 1e-4 on every seed and DiffMPC > 1e-2 on every seed", measured=b_imp,
                 baseline=b_dm, holds=bool(b_imp <= 1e-4 and b_dm > 1e-2), paper=None, kind="finding")


# --------------------------------------------------------------------------- 3. imitation
class SeedBatchedPendulum(PendulumDynamics):
    """One pendulum model per seed in one batch, parametrised by ``log theta`` (our choice, not the paper's).

    Example ``b`` uses model ``b // per_model``.  DiLQR calls the dynamics on ``[E]`` rows (rollouts)
    or on time-major ``[(T-1) E]`` rows (linearisation), ``E = n_models * per_model``, so row ``r``
    belongs to example ``r mod E``.  ``params`` holds ``log (g, m, l)`` per model: positive and
    scale-free steps for parameters of sizes 0.5 to 15.
    """

    def __init__(self, theta: torch.Tensor, per_model: int) -> None:
        super().__init__(dtype=D)
        self.params = nn.Parameter(theta.detach().to(D).log())
        self.per_model = per_model

    def theta(self) -> torch.Tensor:
        """The physical parameters ``(g, m, l)`` per model, [n_models, 3]."""
        return self.params.detach().exp()

    def _coefficients(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        E = self.params.shape[0] * self.per_model
        idx = torch.arange(x.shape[0], device=x.device) % E // self.per_model
        g, m, l = self.params[idx].to(x.dtype).exp().unbind(-1)
        return 1.5 * g / l, 3.0 / (m * l**2)


def identifiable_error(theta: torch.Tensor) -> torch.Tensor:
    """Relative error of (a, b) = (3g/(2l), 3/(m l^2)) against the truth, per model row."""
    g, m, l = theta.unbind(-1)
    a, b = 1.5 * g / l, 3.0 / (m * l**2)
    return torch.sqrt(((a - AB_TRUE[0]) / AB_TRUE[0]) ** 2 + ((b - AB_TRUE[1]) / AB_TRUE[1]) ** 2)


def imitation(run: Run) -> tuple[dict, dict]:
    """Part 3: learn theta by imitation with DiLQR's and DiffMPC's gradients; an MLP policy as the neural baseline."""
    S, P, T = len(run.seeds), run.pick(smoke=4, quick=16, full=16), run.pick(smoke=8, quick=20, full=20)
    steps = run.pick(smoke=3, quick=60, full=300)
    lr = 0.1  # on log theta, cosine-decayed (docs: "Calibration notes")
    x_tr = torch.cat([sample_pendulum_states(2 * P, 3000 + s)[:P] for s in run.seeds])
    x_te = torch.cat([sample_pendulum_states(2 * P, 3000 + s)[P:] for s in run.seeds])
    bounds: dict = {}  # no torque limit, so no bound is active (docs: "Calibration notes")
    cost = pendulum_cost(T, S * P)
    true = PendulumDynamics(*THETA_TRUE, dtype=D)
    with torch.no_grad():
        expert = DiLQR(3, 1, T, max_iter=300, eps=1e-8, grad_mode="none", **bounds)
        _, u_tr, info_tr = expert(x_tr, cost, true)
        _, u_te, info_te = expert(x_te, cost, true)

    def per_model_mse(u, target):
        return ((u - target) ** 2).reshape(T, S, P).mean((0, 2))

    curves, results = {}, {}
    theta0 = torch.tensor(THETA_INIT, dtype=D).repeat(S, 1)
    for mode in ("implicit", "diffmpc"):
        start = time.perf_counter()
        dyn = SeedBatchedPendulum(theta0, P)
        opt = torch.optim.RMSprop(dyn.parameters(), lr=lr, alpha=0.5)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        solver = DiLQR(3, 1, T, max_iter=30, eps=1e-3, grad_mode=mode, verbose=-1, **bounds)
        warm = torch.zeros(T, S * P, 1, dtype=D)
        model_err, train_loss, converged = [], [], 0
        for step in range(steps):
            if step % 50 == 0:
                warm.zero_()  # the official restart_warmstart_every
            _, u, info = solver(x_tr, cost, dyn, u_init=warm)
            warm = u.detach()
            converged += int(info.converged.sum())
            loss = per_model_mse(u, u_tr)
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
            sched.step()
            train_loss.append(loss.detach().tolist())
            model_err.append(identifiable_error(dyn.theta()).tolist())
        theta = dyn.theta()
        with torch.no_grad():
            final = SeedBatchedPendulum(theta, P)
            _, u_hat, _ = DiLQR(3, 1, T, max_iter=300, eps=1e-6, grad_mode="none", **bounds)(x_te, cost, final)
        results[mode] = {
            "theta": theta.tolist(),
            "theta_error": (theta - torch.tensor(THETA_TRUE, dtype=D)).norm(dim=-1).tolist(),
            "identifiable_error": identifiable_error(theta).tolist(),
            "test_mse": per_model_mse(u_hat, u_te).tolist(),
            "train_mse": train_loss[-1],
            "converged_fraction": converged / (steps * S * P),
            "train_seconds": time.perf_counter() - start,
        }
        curves[mode] = {"identifiable_error": model_err, "train_mse": train_loss}

    mlp = {"test_mse": [], "train_mse": []}
    for i, seed in enumerate(run.seeds):
        with seeded(seed):
            net = nn.Sequential(nn.Linear(3, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, T)).to(D)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        sl = slice(i * P, (i + 1) * P)
        X, Y = x_tr[sl], u_tr[:, sl, 0].T
        for _ in range(steps):
            loss = ((net(X) - Y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            mlp["train_mse"].append(float(((net(X) - Y) ** 2).mean()))
            mlp["test_mse"].append(float(((net(x_te[sl]) - u_te[:, sl, 0].T) ** 2).mean()))
    results["mlp"] = mlp

    imp, dm = results["implicit"], results["diffmpc"]
    id_imp, id_dm = float(np.mean(imp["identifiable_error"])), float(np.mean(dm["identifiable_error"]))
    raw_imp, raw_dm = float(np.mean(imp["theta_error"])), float(np.mean(dm["theta_error"]))
    mse_imp, mse_mlp = float(np.mean(imp["test_mse"])), float(np.mean(mlp["test_mse"]))
    wins = sum(a <= b for a, b in zip(imp["identifiable_error"], dm["identifiable_error"], strict=True))
    metrics = {
        "T": T, "per_seed_train": P, "per_seed_test": P, "steps": steps, "rmsprop_lr_on_log_theta": lr,
        "expert_converged": [int(info_tr.converged.sum()), int(info_te.converged.sum())],
        "results": results,
        "identifiable_error_mean": {"implicit": id_imp, "diffmpc": id_dm},
        "theta_error_mean": {"implicit": raw_imp, "diffmpc": raw_dm},
        "test_mse_mean": {"implicit": mse_imp, "diffmpc": float(np.mean(dm["test_mse"])), "mlp": mse_mlp},
        "mlp_over_dilqr_test_mse": mse_mlp / mse_imp,
    }
    metrics["model_error_wins_of_dilqr"] = f"{wins}/{S}"
    return metrics, curves


def _claim_model_error(imit: dict) -> Claim:
    res = imit["results"]
    imp, dm = summary(res["implicit"]["identifiable_error"]), summary(res["diffmpc"]["identifiable_error"])
    return Claim(MODEL_TEXT, criterion="mean over seeds: DiLQR <= DiffMPC", measured=imp, baseline=dm,
                 holds=bool(imp["mean"] <= dm["mean"]), paper="better model loss than DiffMPC (abstract)",
                 kind="finding")


def _claim_raw_theta(imit: dict) -> Claim:
    res = imit["results"]
    imp, dm = summary(res["implicit"]["theta_error"]), summary(res["diffmpc"]["theta_error"])
    return Claim(RAW_THETA_TEXT, criterion="mean over seeds: DiLQR <= DiffMPC", measured=imp, baseline=dm,
                 holds=bool(imp["mean"] <= dm["mean"]), paper="better model loss than DiffMPC (abstract)",
                 kind="finding")


def _claim_beats_mlp(imit: dict) -> Claim:
    res = imit["results"]
    imp, mlp = summary(res["implicit"]["test_mse"]), summary(res["mlp"]["test_mse"])
    return Claim(f"imitation: DiLQR's test MSE <= 1e-2 x an MLP policy's after the same {imit['steps']} steps (mean)",
                 criterion="mean test MSE over seeds: DiLQR <= 1e-2 x MLP", measured=imp, baseline=mlp,
                 holds=bool(imp["mean"] <= 1e-2 * mlp["mean"]),
                 paper="imitation loss up to 10^6x lower than neural-network policies after long training (abstract)",
                 kind="finding")


# --------------------------------------------------------------------------- figures
def _backward_figure(run: Run, speed: dict) -> str:
    """Backward time against K per horizon, the speed-up against K, and (with several horizons) time against T."""
    t = {(r["T"], r["K"], r["mode"]): r["backward_seconds"] for r in speed["timing"]}
    Ts, Ks = sorted({T for T, _, _ in t}), sorted({K for _, K, _ in t})
    modes = {"implicit": "-o", "unroll": "--s"}
    slope_T = speed["time_slope_in_T"]
    fig, axes = plt.subplots(1, 3 if slope_T else 2, figsize=(15 if slope_T else 10, 3.8))
    t_colors = dict(zip(Ts, ("C0", "C1", "C2"), strict=False))
    in_K = {(mode, T): f"{mode}, T={T}" for T in t_colors for mode in modes}
    cost_panel(axes[0], Ks, {label: [t[T, K, mode] for K in Ks] for (mode, T), label in in_K.items()},
               xlabel="iLQR iterations K", ylabel="backward time [s]", title="backward wall time (median of repeats)",
               colors={label: t_colors[T] for (_, T), label in in_K.items()},
               styles={label: modes[mode] for (mode, _), label in in_K.items()})
    ratio_panel(axes[1], Ks, {f"T={T}": [speed["speedup_unroll_over_implicit"][f"T={T},K={K}"] for K in Ks]
                              for T in t_colors},
                xlabel="iLQR iterations K", ylabel="t_unroll / t_implicit",
                title="speed-up of DiLQR over unrolled autodiff", log=True,
                colors={f"T={T}": color for T, color in t_colors.items()})
    axes[1].axhspan(21, 128, color="0.85", label="paper: 21x-128x")
    axes[1].legend(fontsize=7)
    if slope_T:
        in_T = {(mode, K): f"{mode}, K={K}" for K in (Ks[0], Ks[-1]) for mode in modes}
        k_colors = {Ks[0]: "C3", Ks[-1]: "C4"}
        cost_panel(axes[2], Ts, {label: [t[T, K, mode] for T in Ts] for (mode, K), label in in_T.items()},
                   xlabel="horizon T", ylabel="backward time [s]", title="backward time against the horizon",
                   colors={label: k_colors[K] for (_, K), label in in_T.items()},
                   styles={label: modes[mode] for (mode, _), label in in_T.items()})
    return run.savefig(fig, "backward_time")


def _figures(run: Run, speed: dict, grads: dict, imit: dict, curves: dict) -> list[str]:
    names = [_backward_figure(run, speed)]

    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    errs = grads["errors"]
    bounded = grads["torque_bounded"].values()
    groups = [
        ("DiLQR", errs["implicit_theta"]),
        ("DiffMPC", errs["diffmpc_theta"]),
        ("unroll\nvs DiLQR", errs["unroll_vs_implicit_theta"]),
        ("DiLQR\n|u|<=2", [v["implicit_theta"] for v in bounded]),
        ("DiffMPC\n|u|<=2", [v["diffmpc_theta"] for v in bounded]),
    ]
    for j, (_, values) in enumerate(groups):
        axes[0].scatter([j] * len(values), np.maximum(values, 1e-16))
    axes[0].set_xticks(range(len(groups)), [label for label, _ in groups], fontsize=8)
    axes[0].set(yscale="log", ylabel="relative error vs central FD", title="gradient wrt theta (per seed)")
    for mode, color in (("implicit", "C0"), ("diffmpc", "C1")):
        err = np.asarray(curves[mode]["identifiable_error"])
        axes[1].plot(err.mean(1), color=color, label="DiLQR" if mode == "implicit" else "DiffMPC")
        axes[1].fill_between(range(len(err)), err.min(1), err.max(1), color=color, alpha=0.2)
    axes[1].set(yscale="log", xlabel="RMSprop step", ylabel="relative error of (a, b)",
                title="model error during imitation")
    axes[1].legend()
    res = imit["results"]
    labels = ("DiLQR", "DiffMPC", "MLP")
    mses = (res["implicit"]["test_mse"], res["diffmpc"]["test_mse"], res["mlp"]["test_mse"])
    width = 0.8 / len(mses[0])
    for i in range(len(mses[0])):
        axes[2].bar(np.arange(3) + i * width, [m[i] for m in mses], width, label=f"seed {run.seeds[i]}")
    axes[2].set_xticks(np.arange(3) + 0.4 - width / 2, labels)
    axes[2].set(yscale="log", ylabel="test imitation MSE", title=f"after {imit['steps']} steps")
    axes[2].legend(fontsize=7)
    names.append(run.savefig(fig, "gradients_and_imitation"))
    return names


def reproduce(run: Run) -> Result:
    """Run the three parts of the DiLQR reproduction at ``run.scale``."""
    with single_thread():  # tiny tensors; both methods are timed on one thread at every scale
        start = time.perf_counter()
        run.progress(0.0, "backward cost over the (T, K) grid")
        speed, grid = backward_cost(run, run.seeds[0])
        t1 = time.perf_counter()
        run.progress(0.3, "gradients against finite differences")
        grads = exact_gradients(run)
        t2 = time.perf_counter()
        run.progress(0.55, "imitation: DiLQR, DiffMPC, MLP")
        imit, curves = imitation(run)
        t3 = time.perf_counter()
        figures = _figures(run, speed, grads, imit, curves)
        run.progress(1.0, "done")
    claims = [
        _claim_flat_backward(speed, grid), _claim_unroll_grows(speed, grid), _claim_speedup(speed, grid),
        _claim_speedup_grows(speed, grid), _claim_forward_overhead(speed, grid), _claim_constant_graph(speed, grid),
        _claim_theta_gradient(grads), _claim_cost_gradient(grads), _claim_unroll_converges(grads),
        _claim_beats_diffmpc(grads), _claim_bounded(grads),
        _claim_model_error(imit), _claim_raw_theta(imit), _claim_beats_mlp(imit),
    ]
    if run.scale == "full":
        claims.append(_claim_slopes(speed))
    metrics = {
        "backward_cost": speed,
        "gradients": grads,
        "imitation": imit,
        "part_seconds": {"backward_cost": t1 - start, "gradients": t2 - t1, "imitation": t3 - t2},
        "torch_threads": 1,
    }
    return Result(metrics=metrics, claims=claims, figures=figures)


__all__ = ["PAPER", "reproduce", "SeedBatchedPendulum", "identifiable_error", "count_graph_nodes"]
