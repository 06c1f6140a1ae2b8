"""Reproduction of Tyurin (ICML 2025, arXiv:2412.11773): gradient descent with the ℓ-smoothness step size.
Guide, results and calibration notes: docs/papers/generalized_smoothness_gd.md.

Everything is analytic (no data): three test functions with a certified ℓ (``icml25.optim``):
F1 ``Σ cosh(a_i x_i)`` (convex, (L0, L1)), F2 ``Σ x_i⁴/4 − x_i²/2`` (nonconvex, ℓ = 4 + 6 s^{2/3})
and F3 ``Σ c_i x_i − log x_i`` (barrier, ℓ = (C + s)²), d = 10, ``a, c ~ U[0.5, 2]^d`` per seed.
Starts ``x0 = t·1`` (t = 2, 5, 10) for F1/F2 and ``x0 = 1e-4·1`` for F3.  Per seed we run ℓ-GD and,
in the same run, the baselines: the constant step of earlier analyses ``1/ℓ(2||∇f(x0)||)``,
grid-tuned constant steps, clipped GD, normalized GD (grid-tuned c), the ``1/(L0 + L1 s)`` step
and Armijo backtracking (reference).  Claims:

1. descent lemma ``f(x_{k+1}) <= f(x_k) − γ_k s_k²/2`` on every ℓ-GD step (zero violations),
   with the same inequality counted for the baselines' own steps;
2. F1: ℓ-GD iterations barely grow with the start (initial gradient ×10^7) and are >= 50× fewer
   than with the constant theory step at t = 10;
3. F3: ℓ-GD stays in the domain and beats the best constant step of the grid by >= 10×
   (and reaches 1e-8 in < 200 iterations, a known miss);
4. ℓ-GD within 2× of the best of clipped / normalized / 1/(L0 + L1 s) GD on F1 and F2;
5. ℓ ≡ L gives the step 1/L exactly and plain GD's trajectory (quadratic, logistic regression);
6. per-iteration overhead of the ℓ-step: <= 3× plain GD (F1, d = 1000; closed form and quadrature);
7. full scale only: the same per-iteration ratio swept over d = 10 … 10⁶ (log-log slopes; the step size
   adds a d-independent cost to the O(d) gradient, so the ratio falls towards 1 with d).
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.preprocessing import StandardScaler

from icml25.data import load_breast_cancer_split
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.optim.generalized_smoothness_gd import (
    AffineEll,
    CallableEll,
    ConstantEll,
    CoshSum,
    DoubleWell,
    GDResult,
    LogBarrier,
    PowerEll,
    SquaredAffineEll,
    armijo_gd,
    clipped_gd,
    constant_gd,
    ell_gd,
    estimate_ell,
    grid_search,
    l0l1_gd,
    normalized_gd,
    theory_constant_step,
)

F3_ABS_TEXT = "F3 barrier: ℓ-GD reaches ||∇f|| <= 1e-8 in < 200 iterations"
OVERHEAD_TEXT = ("Step overhead: ℓ-GD per-iteration wall time <= 3× plain GD (F1, d = 1000; closed form and "
                 "32-node quadrature), medians of interleaved repeats")
SWEEP_TEXT = ("Step overhead against the dimension: ℓ-GD / plain GD per-iteration time on F1 for d = 10 … 10⁶ "
              "(closed form and 32-node quadrature), thread CPU time")

PAPER = Paper(
    id="generalized_smoothness_gd",
    title="Toward a Unified Theory of Gradient Descent under Generalized Smoothness",
    module="icml25.optim.generalized_smoothness_gd",
    anchors=("torch.optim", "optax", "scipy.integrate.quad"),
    default_seeds=(0, 1, 2),
    known_misses={F3_ABS_TEXT: "near x* the step tends to 1/C², so with C/c_min ≈ 3-3.6 reaching 1e-8 takes "
                               "≈ 250-400 iterations",
                  OVERHEAD_TEXT: "full scale only (2.9-3.0× closed form, 3.6-3.7× quadrature): over 5 000 iterations "
                                 "ℓ-GD drives about half of the 1 000 coordinates to subnormal floats, where the cosh "
                                 "gradient costs about 4× more; the slow-moving plain GD never gets there"},
)

D = 10
T_STARTS = (2.0, 5.0, 10.0)
F2_JITTER = 0.05  # our choice: x0 = t(1 + 0.05 u), u ~ U[-1, 1]^d, so that F2 differs per seed
F3_X0 = 1e-4
TOL = 1e-6
TOL_F3 = 1e-8
RTOL_DESCENT = 1e-9
CONST_GRID = tuple(10.0**-k for k in range(1, 9))
NORMALIZED_GRID = (1.0, 0.1, 0.01, 0.001)
ELL_MAX_ITER = 10_000


def _violations(res: GDResult) -> int:
    return res.descent_violations(RTOL_DESCENT)


def _doublings(res: GDResult) -> int:
    """Steps after which the gradient norm more than doubled (the paper: it never does)."""
    return int(np.sum(res.grad_norms[1:] > 2.0 * res.grad_norms[:-1] * (1 + 1e-12)))


def _iters(res: GDResult, cap: int) -> int:
    """Iterations to tolerance; a run that did not converge counts at the cap (a lower bound)."""
    return res.n_iter if res.converged else cap


def _adaptive_baselines(fn, x0: np.ndarray, L0: float, L1: float, cap: int) -> dict[str, GDResult]:
    grid = grid_search(lambda c: normalized_gd(fn.grad, x0, c, f=fn.f, tol=TOL, max_iter=cap), NORMALIZED_GRID)
    # Normalized GD with a fixed c ends in an oscillation of size ~c and rarely reaches 1e-6 within
    # the cap; then the best c is the one that got closest (smallest gradient norm reached).
    best_c = grid.best_value
    if best_c is None:
        best_c = min(NORMALIZED_GRID, key=lambda c: float(grid.results[c].grad_norms.min()))
    return {
        "clipped": clipped_gd(fn.grad, x0, L0, L1, f=fn.f, tol=TOL, max_iter=cap),
        "normalized": grid.results[best_c],
        "l0l1": l0l1_gd(fn.grad, x0, L0, L1, f=fn.f, tol=TOL, max_iter=cap),
    }


def _f1_f2_case(fn, x0: np.ndarray, affine: AffineEll, caps: dict, theory: bool) -> dict:
    ell = ell_gd(fn.grad, x0, fn.ell, f=fn.f, tol=TOL, max_iter=ELL_MAX_ITER)
    base = _adaptive_baselines(fn, x0, affine.L0, affine.L1, caps["adaptive"])
    armijo = armijo_gd(fn.grad, x0, fn.f, tol=TOL, max_iter=caps["adaptive"])
    out = {
        "ell": ell,
        "base": base,
        "row": {
            "ell_iters": _iters(ell, ELL_MAX_ITER),
            "ell_converged": ell.converged,
            "ell_violations": _violations(ell),
            "ell_steps": ell.n_iter,
            "ell_gradient_doublings": _doublings(ell),
            "min_descent_gap_over_bound": float(np.min(
                ell.descent_gaps() / np.maximum(0.5 * ell.steps * ell.grad_norms[:-1] ** 2, 1e-300))),
            "grad_norm0": float(ell.grad_norms[0]),
            **{f"{k}_iters": _iters(r, caps["adaptive"]) for k, r in base.items()},
            **{f"{k}_converged": r.converged for k, r in base.items()},
            **{f"{k}_violations": _violations(r) for k, r in base.items()},
            "normalized_c": float(base["normalized"].steps[0] * base["normalized"].grad_norms[0]),
            "armijo_iters": _iters(armijo, caps["adaptive"]),
            "armijo_f_evals": armijo.n_f_evals,
            "adaptive_cap": caps["adaptive"],
        },
    }
    if theory:
        eta = theory_constant_step(fn.ell, float(ell.grad_norms[0]))
        const = constant_gd(fn.grad, x0, eta, tol=TOL, max_iter=caps["theory"])
        out["const"] = const
        out["row"] |= {"theory_step": eta, "theory_iters": _iters(const, caps["theory"]),
                       "theory_converged": const.converged, "theory_cap": caps["theory"]}
    return out


def _f3_case(fn: LogBarrier, cap: int) -> dict:
    x0 = np.full(D, F3_X0)
    min_x = [float(x0.min())]

    def track(k: int, x: np.ndarray, s: float) -> None:
        min_x.append(float(x.min()))

    ell = ell_gd(fn.grad, x0, fn.ell, f=fn.f, tol=TOL_F3, max_iter=ELL_MAX_ITER, domain=fn.domain, callback=track)
    # Grid from the largest step down; each run is capped at the best count so far (a capped run
    # is counted at its cap, a lower bound), which finds the same best step at a fraction of the cost.
    budget = [cap]

    def const_run(eta: float) -> GDResult:
        res = constant_gd(fn.grad, x0, eta, f=fn.f, tol=TOL_F3, max_iter=budget[0], domain=fn.domain)
        if res.converged:
            budget[0] = min(budget[0], res.n_iter)
        return res

    grid = grid_search(const_run, CONST_GRID)
    armijo = armijo_gd(fn.grad, x0, fn.f, tol=TOL_F3, max_iter=cap, domain=fn.domain)
    runs = {f"{eta:.0e}": r for eta, r in grid.results.items()}
    best_iters = grid.best.n_iter if grid.best is not None else cap
    return {
        "ell": ell,
        "grid": grid,
        "row": {
            "ell_iters": _iters(ell, ELL_MAX_ITER),
            "ell_converged": ell.converged,
            "ell_diverged": ell.diverged,
            "ell_min_coordinate": float(min(min_x + [float(ell.x.min())])),
            "ell_violations": _violations(ell),
            "ell_steps": ell.n_iter,
            "ell_gradient_doublings": _doublings(ell),
            "condition_C_over_cmin": float(fn.c.max() / fn.c.min()),
            "grad_norm0": float(ell.grad_norms[0]),
            "const_iters": {k: r.n_iter for k, r in runs.items()},  # at its cap when not converged
            "const_diverged": {k: r.diverged for k, r in runs.items()},
            "const_violations": {k: _violations(r) for k, r in runs.items()},
            "best_const_step": grid.best_value,
            "best_const_iters": best_iters,
            "const_cap": cap,
            "armijo_iters": _iters(armijo, cap),
            "armijo_f_evals": armijo.n_f_evals,
        },
    }


def _recovers_gd(seed: int, n_iter: int) -> dict:
    """ℓ ≡ L: exact step 1/L and plain GD's trajectory, on a quadratic and on logistic regression."""
    rng = np.random.default_rng([seed, 5])
    M = rng.normal(size=(20, 20))
    H = M @ M.T / 20 + 0.1 * np.eye(20)
    L = float(np.linalg.eigvalsh(H).max())
    x0 = rng.normal(size=20)
    a = ell_gd(lambda x: H @ x, x0, ConstantEll(L), max_iter=n_iter, tol=0.0)
    b = constant_gd(lambda x: H @ x, x0, 1.0 / L, max_iter=n_iter, tol=0.0)

    split = load_breast_cancer_split(seed=seed)
    X = StandardScaler().fit_transform(split.X_train)
    X = np.column_stack([X, np.ones(len(X))])
    y = split.y_train.astype(float)
    L_log = float(np.linalg.eigvalsh(X.T @ X).max()) / (4 * len(X))

    def grad(w: np.ndarray) -> np.ndarray:
        return X.T @ (1.0 / (1.0 + np.exp(-X @ w)) - y) / len(X)

    w0 = np.zeros(X.shape[1])
    c = ell_gd(grad, w0, ConstantEll(L_log), max_iter=n_iter, tol=0.0)
    d = constant_gd(grad, w0, 1.0 / L_log, max_iter=n_iter, tol=0.0)
    s_grid = np.concatenate([[0.0], np.logspace(-8, 8, 17)])
    exact = bool(np.all(ConstantEll(L).step(s_grid) == 1.0 / L) and np.all(AffineEll(L, 0.0).step(s_grid) == 1.0 / L))
    quad_rel = float(np.max(np.abs(CallableEll(lambda u: np.full_like(u, L)).step(s_grid) * L - 1.0)))
    return {
        "step_exactly_one_over_L": exact and bool(np.all(a.steps == 1.0 / L)) and bool(np.all(c.steps == 1.0 / L_log)),
        "quadrature_constant_rel_error": quad_rel,
        "quadratic_max_abs_diff": float(np.max(np.abs(a.x - b.x))),
        "quadratic_grad_norms_equal": bool(np.array_equal(a.grad_norms, b.grad_norms)),
        "logreg_max_abs_diff": float(np.max(np.abs(c.x - d.x))),
        "logreg_grad_norm_final": float(c.grad_norms[-1]),
    }


def _overhead(seed: int, n_iter: int, repeats: int) -> dict:
    """Per-iteration wall time of ℓ-GD against plain GD on F1 with d = 1000 (interleaved repeats)."""
    fn = CoshSum.random(1000, np.random.default_rng([seed, 6]))
    x0 = np.full(1000, 3.0)
    eta = theory_constant_step(fn.ell, float(np.linalg.norm(fn.grad(x0))))
    quad_ell = CallableEll(lambda u, L0=fn.ell.L0, L1=fn.ell.L1: L0 + L1 * u)
    solvers = {
        "plain_gd": lambda: constant_gd(fn.grad, x0, eta, max_iter=n_iter, tol=0.0),
        "ell_closed_form": lambda: ell_gd(fn.grad, x0, fn.ell, max_iter=n_iter, tol=0.0),
        "ell_quadrature": lambda: ell_gd(fn.grad, x0, quad_ell, max_iter=n_iter, tol=0.0),
    }
    last: dict[str, GDResult] = {}  # each solver's last result, for its iteration count
    seconds = interleaved_seconds({name: lambda name=name, solve=solve, last=last: last.__setitem__(name, solve())
                                   for name, solve in solvers.items()}, repeats=repeats, warmup=0)
    med = {k: float(np.median(v)) / max(last[k].n_iter, 1) for k, v in seconds.items()}
    grid = [float(s) for s in np.logspace(-3, 6, 200)]
    step_seconds = {
        name: median_seconds(lambda ell=ell: [ell.step(s) for s in grid], repeats=5) / len(grid)
        for name, ell in {"affine": fn.ell, "squared_affine": SquaredAffineEll(2.0, 1.0),
                          "power_quadrature": PowerEll(4.0, 6.0, 2.0 / 3.0), "callable_quadrature": quad_ell}.items()
    }
    return {
        "per_iteration_seconds_median": med,
        "speedup_ratio_closed_form_over_plain": med["ell_closed_form"] / med["plain_gd"],
        "speedup_ratio_quadrature_over_plain": med["ell_quadrature"] / med["plain_gd"],
        "step_seconds_median": step_seconds,
        "n_iter": n_iter,
        "repeats": repeats,
    }


def _dimension_sweep(seed: int, dims: tuple[int, ...], n_iter: int, repeats: int) -> dict | None:
    """Per-iteration thread CPU time of plain GD and ℓ-GD (closed form, quadrature) on F1 at every d in ``dims``
    (x0 = 3·1, ``n_iter`` iterations with tol = 0, medians of interleaved repeats, one BLAS thread), and the
    log-log slopes in d. Each iteration costs O(d) for the gradient, its norm and the update; the ℓ-step adds a
    d-independent scalar computation (a closed form, or 32 quadrature nodes), so the ratio should fall towards 1.
    ``subnormal_fraction`` is the share of the final ℓ-GD iterate's coordinates that are subnormal floats (which
    slow the cosh gradient down)."""
    if not dims:
        return None
    rows = []
    with single_thread():
        for d in dims:
            fn = CoshSum.random(d, np.random.default_rng([seed, 6]))
            x0 = np.full(d, 3.0)
            eta = theory_constant_step(fn.ell, float(np.linalg.norm(fn.grad(x0))))
            quad_ell = CallableEll(lambda u, L0=fn.ell.L0, L1=fn.ell.L1: L0 + L1 * u)
            solvers = {
                "plain_gd": lambda fn=fn, x0=x0, eta=eta: constant_gd(fn.grad, x0, eta, max_iter=n_iter, tol=0.0),
                "ell_closed_form": lambda fn=fn, x0=x0: ell_gd(fn.grad, x0, fn.ell, max_iter=n_iter, tol=0.0),
                "ell_quadrature": lambda fn=fn, x0=x0, q=quad_ell: ell_gd(fn.grad, x0, q, max_iter=n_iter, tol=0.0),
            }
            last: dict[str, GDResult] = {}
            sec = interleaved_seconds({name: lambda name=name, solve=solve, last=last: last.__setitem__(name, solve())
                                       for name, solve in solvers.items()}, repeats, warmup=1, clock=time.thread_time)
            med = {k: float(np.median(v)) / max(last[k].n_iter, 1) for k, v in sec.items()}
            x = last["ell_closed_form"].x
            rows.append({"d": d, **{f"{k}_seconds": v for k, v in med.items()},
                         "closed_form_over_plain_time": med["ell_closed_form"] / med["plain_gd"],
                         "quadrature_over_plain_time": med["ell_quadrature"] / med["plain_gd"],
                         "subnormal_fraction": float(np.mean((x != 0) & (np.abs(x) < np.finfo(float).tiny)))})
    ds = [r["d"] for r in rows]
    return {"rows": rows, "clock": "thread_time", "n_iter": n_iter, "repeats": repeats, "seed": seed,
            "time_slope_in_d": {k: loglog_slope(ds, [r[f"{k}_seconds"] for r in rows])
                                for k in ("plain_gd", "ell_closed_form", "ell_quadrature")}}


def _figure_dimension_sweep(run: Run, sweep: dict) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "cost_vs_dimension", [r["d"] for r in rows],
        {label: [r[f"{key}_seconds"] for r in rows] for key, label in (
            ("plain_gd", "plain GD"), ("ell_closed_form", "ℓ-GD closed form"), ("ell_quadrature", "ℓ-GD quadrature"))},
        xlabel="dimension d", ylabel="thread CPU time per iteration [s]", title="F1: cost per iteration",
        ratios={"closed form": [r["closed_form_over_plain_time"] for r in rows],
                "quadrature": [r["quadrature_over_plain_time"] for r in rows]},
        bounds={"3× (the claim)": 3.0, "1× (parity)": 1.0}, ratio_ylabel="ℓ-GD / plain GD per iteration")


def _figure(run: Run, f1_case: dict, f3_case: dict, f2_case: dict) -> str:
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0, 0]
    ax.semilogy(f1_case["ell"].grad_norms, label="ℓ-GD (paper)", lw=2)
    names = {"l0l1": "1/(L0+L1 s)", "clipped": "clipped GD", "normalized": "normalized GD (best c)"}
    for k, r in f1_case["base"].items():
        ax.semilogy(r.grad_norms, label=names[k], lw=1)
    const = f1_case["const"].grad_norms
    stride = max(1, len(const) // 2000)
    ax.semilogy(np.arange(len(const))[::stride], const[::stride], label="constant 1/ℓ(2s0)", lw=1, ls="--")
    ax.set_xscale("symlog", linthresh=10)
    ax.set(title=f"F1 cosh, t = 10 (||∇f(x0)|| ≈ {const[0]:.0e})", xlabel="iteration", ylabel="||∇f||")
    ax.legend(fontsize=7)

    ax = axes[0, 1]
    ax.semilogy(f3_case["ell"].grad_norms, label="ℓ-GD (paper)", lw=2)
    for eta in (1e-1, 1e-2, 1e-3):
        r = f3_case["grid"].results[eta]
        stride = max(1, len(r.grad_norms) // 2000)
        ax.semilogy(np.arange(len(r.grad_norms))[::stride], r.grad_norms[::stride], label=f"constant η={eta:g}")
    ax.set_xscale("symlog", linthresh=10)
    ax.set(title="F3 log barrier from x0 = 1e-4", xlabel="iteration", ylabel="||∇f||")
    ax.legend(fontsize=7)

    ax = axes[1, 0]
    s = np.logspace(-2, 3, 400)
    L0, L1 = 1.0, 1.0
    ax.loglog(s, AffineEll(L0, L1).step(s), label="ℓ-step, ℓ = L0 + L1 s", lw=2)
    ax.loglog(s, 1 / (L0 + L1 * s), label="1/(L0 + L1 s)")
    ax.loglog(s, np.minimum(1 / (2 * L0), 1 / (2 * L1 * s)), label="clipped min(1/2L0, 1/(2L1 s))")
    ax.loglog(s, np.log(2) / (L1 * s), ls=":", c="gray", label="ln2/(L1 s)")
    ax.axhline(1 / L0, ls=":", c="k", lw=0.8)
    ax.set(title="step size vs gradient norm (L0 = L1 = 1): principled clipping", xlabel="s = ||∇f||",
           ylabel="γ(s)")
    ax.legend(fontsize=7)

    ax = axes[1, 1]
    for label, case in (("ℓ-GD F1 t=10", f1_case), ("ℓ-GD F2 t=10", f2_case), ("ℓ-GD F3", f3_case)):
        r = case["ell"]
        bound = 0.5 * r.steps * r.grad_norms[:-1] ** 2
        keep = bound > 1e-8 * np.abs(r.f_values[:-1])
        ratio = (r.f_values[:-1] - r.f_values[1:])[keep] / bound[keep]
        ax.plot(np.flatnonzero(keep) + 1, ratio, label=label)
    r = f1_case["base"]["normalized"]
    bound = 0.5 * r.steps * r.grad_norms[:-1] ** 2
    ratio = (r.f_values[:-1] - r.f_values[1:]) / bound
    ax.plot(np.arange(1, ratio.size + 1), np.clip(ratio, -3, None), label="normalized GD F1 t=10", lw=0.6,
            alpha=0.5)
    ax.axhline(1.0, c="k", ls="--", lw=1)
    ax.set_xscale("log")
    ax.set(title="descent (f_k − f_{k+1}) / (γ_k s_k²/2): >= 1 is the lemma", xlabel="iteration + 1",
           ylabel="ratio (clipped at −3)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return run.savefig(fig, "ell_gd")


def reproduce(run: Run) -> Result:
    # 1. Caps on the iterations (a capped run counts at its cap, a lower bound).
    caps = {
        "theory": run.pick(smoke=2_000, quick=25_000, full=1_000_000),
        "adaptive": run.pick(smoke=1_000, quick=2_000, full=100_000),
        "f3_grid": run.pick(smoke=2_000, quick=30_000, full=1_000_000),
    }
    n_recover = run.pick(smoke=50, quick=300, full=2000)

    # 2. Experiments: per seed F1/F2 from every start, F3, and the ℓ ≡ L check; then the step overhead.
    per_seed: dict[int, dict] = {}
    fig_cases: dict[str, dict] = {}
    for i, seed in enumerate(run.seeds):
        per_seed[seed] = _run_seed(seed, caps, n_recover, fig_cases if i == 0 else None)
        run.progress((i + 1) / (len(run.seeds) + 1), f"seed {seed}")
    overhead = _overhead(run.seeds[0], run.pick(smoke=100, quick=1000, full=5000), run.pick(smoke=3, quick=7, full=21))
    sweep = _dimension_sweep(run.seeds[0], run.pick(smoke=(10, 100), quick=(), full=(10, 100, 1_000, 10_000, 100_000,
                                                                                         1_000_000)),
                             run.pick(smoke=20, quick=0, full=100), run.pick(smoke=2, quick=0, full=7))
    run.progress(1.0, "overhead timed")
    rows = [per_seed[s] for s in run.seeds]

    # 3. Claims.
    claims = [
        _claim_descent_lemma(rows),
        _claim_f1_start_independent(rows),
        _claim_f1_theory_step(rows, caps),
        _claim_f3_beats_constant(rows, caps),
        _claim_f3_absolute(rows),
        _claim_competitive(rows, caps),
        _claim_recovers_gd(rows),
        _claim_overhead(overhead),
    ]
    if run.scale == "full":
        claims.append(_claim_dimension_sweep(sweep))

    # 4. Figure and metrics.
    figures = [_figure(run, fig_cases["F1"], fig_cases["F3"], fig_cases["F2"])]
    if sweep is not None:
        figures.append(_figure_dimension_sweep(run, sweep))
    metrics = _metrics(per_seed, rows, caps, overhead) | {"step_overhead_vs_dimension": sweep}
    return Result(metrics=metrics, claims=claims, figures=figures)


STARTS = [f"F1_t{t:g}" for t in T_STARTS] + [f"F2_t{t:g}" for t in T_STARTS] + ["F3"]
F1F2 = STARTS[:-1]
ADAPTIVE = ("clipped", "normalized", "l0l1")


def _run_seed(seed: int, caps: dict, n_recover: int, fig_cases: dict | None) -> dict:
    """All runs of one seed; the first seed also keeps the t = 10 and F3 cases for the figure."""
    f1 = CoshSum.random(D, np.random.default_rng([seed, 1]))
    f2 = DoubleWell(D)
    f3 = LogBarrier.random(D, np.random.default_rng([seed, 3]))
    jitter = np.random.default_rng([seed, 2]).uniform(-1.0, 1.0, D)
    rows: dict[str, dict] = {}
    for t in T_STARTS:
        case = _f1_f2_case(f1, np.full(D, t), f1.ell, caps, theory=True)
        rows[f"F1_t{t:g}"] = case["row"]
        if fig_cases is not None and t == T_STARTS[-1]:
            fig_cases["F1"] = case
            path = [np.full(D, t)]
            ell_gd(f1.grad, path[0], f1.ell, tol=TOL, callback=lambda k, x, s, path=path: path.append(x.copy()))
            fitted = estimate_ell(f1.grad, f1.hvp, np.array(path), seed=seed)
            rows["estimate_ell_F1"] = {"fitted_L0": fitted.L0, "fitted_L1": fitted.L1,
                                       "certified_L0": f1.ell.L0, "certified_L1": f1.ell.L1}
        case = _f1_f2_case(f2, t * (1.0 + F2_JITTER * jitter), f2.affine_ell, caps, theory=False)
        rows[f"F2_t{t:g}"] = case["row"]
        if fig_cases is not None and t == T_STARTS[-1]:
            fig_cases["F2"] = case
    case = _f3_case(f3, caps["f3_grid"])
    rows["F3"] = case["row"]
    if fig_cases is not None:
        fig_cases["F3"] = case
    rows["recovers_gd"] = _recovers_gd(seed, n_recover)
    return rows


def _claim_descent_lemma(rows: list[dict]) -> Claim:
    ell_viol = sum(r[k]["ell_violations"] for r in rows for k in STARTS)
    ell_steps = sum(r[k]["ell_steps"] for r in rows for k in STARTS)
    base_viol = _baseline_violations(rows)
    doublings = sum(r[k]["ell_gradient_doublings"] for r in rows for k in STARTS)
    return Claim(
        text="Descent lemma f(x+) <= f(x) − γ s²/2 holds on every ℓ-GD step (F1–F3, all starts, rtol 1e-9)",
        criterion="zero violations over all ℓ-GD steps, functions, starts and seeds, every run converged",
        paper="holds on every step for any ℓ-smooth f (theorem, no experiments)",
        measured={"violations": ell_viol, "steps_checked": ell_steps, "gradient_doublings": doublings},
        baseline={"violations_of_same_inequality_by_baselines": base_viol},
        holds=ell_viol == 0 and ell_steps > 0 and all(r[k]["ell_converged"] for r in rows for k in STARTS),
    )


def _baseline_violations(rows: list[dict]) -> dict[str, int]:
    out = {m: sum(r[k][f"{m}_violations"] for r in rows for k in F1F2) for m in ADAPTIVE}
    out["constant_grid_F3"] = sum(sum(r["F3"]["const_violations"].values()) for r in rows)
    return out


def _f1_iters(rows: list[dict]) -> dict[float, list[int]]:
    return {t: [r[f"F1_t{t:g}"]["ell_iters"] for r in rows] for t in T_STARTS}


def _claim_f1_start_independent(rows: list[dict]) -> Claim:
    it = _f1_iters(rows)
    growth = [a / b for a, b in zip(it[10.0], it[2.0], strict=True)]
    return Claim(
        text="F1: ℓ-GD iterations to 1e-6 do not depend on the initial gradient (t = 2 → 10, ×~1e7)",
        criterion="iters(t=10) <= 10 × iters(t=2) and <= 2000, every seed",
        paper="rates without the initial-gradient factor of earlier constant-step analyses (theorem)",
        measured={"max_growth_t10_over_t2": max(growth), "ell_iters_t10": it[10.0], "ell_iters_t2": it[2.0]},
        baseline={"theory_step_iters_t2": [r["F1_t2"]["theory_iters"] for r in rows],
                  "theory_step_iters_t10": [r["F1_t10"]["theory_iters"] for r in rows]},
        holds=max(growth) <= 10 and max(it[10.0]) <= 2000,
    )


def _claim_f1_theory_step(rows: list[dict], caps: dict) -> Claim:
    ell10 = _f1_iters(rows)[10.0]
    theory10 = [r["F1_t10"]["theory_iters"] for r in rows]
    ratio = [a / b for a, b in zip(theory10, ell10, strict=True)]
    capped = [not r["F1_t10"]["theory_converged"] for r in rows]
    cap_enough = all(caps["theory"] >= 50 * n for n in ell10)  # a capped run then passes only if truly >= 50x
    return Claim(
        text="F1 t=10: constant theory step 1/ℓ(2||∇f(x0)||) needs >= 50× the ℓ-GD iterations",
        criterion="min over seeds of iters(theory step) / iters(ℓ-GD) >= 50 (a run at its cap counts at the cap, "
                  "and the cap is >= 50× the ℓ-GD iterations)",
        paper=None,
        measured=summary(ratio),
        baseline={"theory_iters": theory10, "capped": capped, "cap": caps["theory"]},
        holds=min(ratio) >= 50 and (cap_enough or not any(capped)),
    )


def _claim_f3_beats_constant(rows: list[dict], caps: dict) -> Claim:
    f3 = [r["F3"] for r in rows]
    ratio = [r["best_const_iters"] / r["ell_iters"] for r in f3]
    every_step = all(r["const_diverged"][k] or r["const_iters"][k] >= 10 * r["ell_iters"]
                     for r in f3 for k in r["const_iters"])
    in_domain = all(r["ell_converged"] and not r["ell_diverged"] and r["ell_min_coordinate"] > 0 for r in f3)
    return Claim(
        text="F3 barrier (ρ = 2): ℓ-GD stays in the domain and needs >= 10× fewer iterations than the best "
             "constant step in {1e-1..1e-8}",
        criterion="min over seeds of iters(best constant step) / iters(ℓ-GD) >= 10; every grid step diverges or "
                  "is >= 10× slower; ℓ-GD converges inside the domain",
        paper="ℓ-GD covers ℓ growing faster than linearly, e.g. barriers (theorem, no experiments)",
        measured=summary(ratio),
        baseline={"best_const_iters": [r["best_const_iters"] for r in f3],
                  "best_const_step": [r["best_const_step"] for r in f3], "cap": caps["f3_grid"]},
        holds=in_domain and min(ratio) >= 10 and every_step,
    )


def _claim_f3_absolute(rows: list[dict]) -> Claim:
    f3 = [r["F3"] for r in rows]
    worst = max(r["ell_iters"] for r in f3)
    return Claim(
        text=F3_ABS_TEXT,
        criterion="max over seeds of ℓ-GD iterations to ||∇f|| <= 1e-8 from x0 = 1e-4·1 < 200",
        paper=None,
        measured=worst,
        baseline={"best_const_iters": [r["best_const_iters"] for r in f3],
                  "C_over_cmin": [r["condition_C_over_cmin"] for r in f3]},
        holds=worst < 200,
    )


def _claim_competitive(rows: list[dict], caps: dict) -> Claim:
    ratios = [r[k]["ell_iters"] / min(r[k][f"{m}_iters"] for m in ADAPTIVE) for r in rows for k in F1F2]
    return Claim(
        text="F1, F2: ℓ-GD (no tuning) within 2× the iterations of the best of clipped GD, normalized GD "
             "(grid-tuned c) and the 1/(L0 + L1 s) step",
        criterion="max over seeds and starts of iters(ℓ-GD) / iters(best baseline) <= 2",
        paper=None,
        measured=max(ratios),
        baseline={"mean_iters": _mean_iters(rows), "cap": caps["adaptive"]},
        holds=max(ratios) <= 2.0,
    )


def _mean_iters(rows: list[dict]) -> dict[str, float]:
    return {m: float(np.mean([r[k][f"{m}_iters"] for r in rows for k in F1F2]))
            for m in ("ell", *ADAPTIVE, "armijo")}


def _claim_recovers_gd(rows: list[dict]) -> Claim:
    rec = [r["recovers_gd"] for r in rows]
    diff = max(max(r["quadratic_max_abs_diff"], r["logreg_max_abs_diff"]) for r in rec)
    quad_rel = max(r["quadrature_constant_rel_error"] for r in rec)
    exact = all(r["step_exactly_one_over_L"] and r["quadratic_grad_norms_equal"] for r in rec) and diff == 0.0
    return Claim(
        text="ℓ ≡ L recovers GD: step == 1/L exactly; same trajectory as GD with 1/L (quadratic, logistic "
             "regression on breast cancer)",
        criterion="step == 1/L and identical trajectories (max abs difference 0), quadrature step error <= 1e-14",
        paper="the step reduces to 1/L for ℓ ≡ L (by definition)",
        measured={"max_abs_trajectory_diff": diff, "quadrature_step_rel_error": quad_rel},
        baseline=None,
        holds=exact and quad_rel <= 1e-14,
        kind="check",
    )


def _claim_overhead(overhead: dict) -> Claim:
    closed = overhead["speedup_ratio_closed_form_over_plain"]
    quad = overhead["speedup_ratio_quadrature_over_plain"]
    return Claim(
        text=OVERHEAD_TEXT,
        criterion="median per-iteration time ratio ℓ-GD / plain GD <= 3 for both the closed form and quadrature",
        paper=None,
        measured={"closed_form": closed, "quadrature": quad},
        baseline=1.0,
        holds=max(closed, quad) <= 3.0,
    )


def _claim_dimension_sweep(sweep: dict) -> Claim:
    closed = {r["d"]: r["closed_form_over_plain_time"] for r in sweep["rows"]}
    quad = {r["d"]: r["quadrature_over_plain_time"] for r in sweep["rows"]}
    largest = sweep["rows"][-1]["d"]
    slopes = sweep["time_slope_in_d"]
    return Claim(
        text=SWEEP_TEXT,
        criterion="medians of interleaved repeats (100 iterations from x0 = 3·1, one seed): ratio <= 3 at every d for "
                  "both step rules, and <= 1.2 at the largest d (the O(d) gradient dominates the d-independent step)",
        paper=None,
        measured={"closed_form_by_d": closed, "quadrature_by_d": quad,
                  "slope_closed_form": slopes["ell_closed_form"], "slope_quadrature": slopes["ell_quadrature"]},
        baseline={"slope_plain_gd": slopes["plain_gd"]},
        holds=bool(max(*closed.values(), *quad.values()) <= 3.0 and max(closed[largest], quad[largest]) <= 1.2),
    )


def _metrics(per_seed: dict, rows: list[dict], caps: dict, overhead: dict) -> dict:
    it = _f1_iters(rows)
    return {
        "per_seed": {str(s): r for s, r in per_seed.items()},
        "caps": caps,
        "f1_ell_iters_by_t": {f"t{t:g}": it[t] for t in T_STARTS},
        "f1_growth_t10_over_t2": [a / b for a, b in zip(it[10.0], it[2.0], strict=True)],
        "f1_theory_ratio_t10": [r["F1_t10"]["theory_iters"] / n for r, n in zip(rows, it[10.0], strict=True)],
        "f3_ratio_best_const_over_ell": [r["F3"]["best_const_iters"] / r["F3"]["ell_iters"] for r in rows],
        "claim4_ratios_ell_over_best": [r[k]["ell_iters"] / min(r[k][f"{m}_iters"] for m in ADAPTIVE)
                                        for r in rows for k in F1F2],
        "claim4_mean_iters": _mean_iters(rows),
        "descent_violations_ell": sum(r[k]["ell_violations"] for r in rows for k in STARTS),
        "descent_violations_baselines": _baseline_violations(rows),
        "step_overhead_time": overhead,
    }
