"""Data preparation, constant fitting with SciPy's optimisers, and the parallel fitting loop."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from icml25.symbolic.sr_pareto_fronts.grammar import Expression, parse_labelled
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar, check_sequence

SCIPY_METHODS: tuple[str, ...] = ("BFGS", "CG", "L-BFGS-B", "Nelder-Mead", "Powell", "SLSQP", "TNC", "trust-constr")
"""The eight ``scipy.optimize.minimize`` methods compared in the paper (finite-difference gradients)."""


def check_method(method: str) -> str:
    """Return SciPy's spelling of an optimiser name (case-insensitive) or raise ValueError."""
    check_instance(method, "method", str, "a scipy.optimize.minimize method name")
    for name in SCIPY_METHODS:
        if name.lower() == method.lower():
            return name
    allowed = ", ".join(repr(m) for m in SCIPY_METHODS)
    raise ValueError(f"method must be one of {allowed} (any case), got {method!r}")


def start_seed(seed: Seed) -> int:
    """The integer seed of the official ``np.random.RandomState`` start draws (an int in [0, 2**32)).

    An int is used as is; a ``numpy.random.Generator`` (or ``None``, fresh entropy) draws one.
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return int(as_generator(seed).integers(2**32))
    return check_scalar(seed, "seed", "int", min=0, max=2**32 - 1)


def check_n_jobs(n_jobs: int) -> int:
    """``n_jobs`` >= 1 workers, or -1 for all cores."""
    n_jobs = check_scalar(n_jobs, "n_jobs", "int", min=-1)
    if n_jobs == 0:
        raise ValueError(f"n_jobs must be an integer >= 1 or -1 (all cores), got {n_jobs!r}")
    return (os.cpu_count() or 1) if n_jobs == -1 else n_jobs


@dataclass(frozen=True)
class Data:
    """Prepared training data: features as rows ``XT`` (d, n), target ``y`` and its scale ``y_std``.

    With ``standardize`` (the official preprocessing) X is standardised per feature and y to zero mean and
    unit variance; ``y_std`` converts MSE back to the original units (MSE * y_std**2).
    """

    XT: np.ndarray
    y: np.ndarray
    y_std: float

    @property
    def n_features(self) -> int:
        return self.XT.shape[0]


def prepare_data(X: np.ndarray, y: np.ndarray, standardize: bool = True) -> Data:
    """Validate (X, y) and apply the official preprocessing (see :class:`Data`)."""
    X = check_array(X, "X", ndim=2, dtype=float, min_len=3)
    y = check_array(y, "y", ndim=1, dtype=float)
    check_bool(standardize, "standardize")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
    if X.shape[1] == 0:
        raise ValueError(f"X must have at least one feature, got shape {X.shape}")
    if np.var(y) == 0:
        raise ValueError("y must not be constant (R^2 is undefined), got a constant y")
    y_std = 1.0
    if standardize:
        scale = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
        y_std = float(y.std())
        y = (y - y.mean()) / y_std
    return Data(XT=np.ascontiguousarray(X.T), y=np.ascontiguousarray(y), y_std=y_std)


@dataclass(frozen=True)
class FitResult:
    """Fitted constants of one expression: MSE on the prepared y, training R^2 (NaN when the prediction is not
    finite), optimiser iterations ``nit`` (None without constants) and seconds spent in the optimiser."""

    constants: np.ndarray
    mse: float
    r2: float
    nit: int | None
    seconds: float

    @property
    def failed(self) -> bool:
        return not np.isfinite(self.r2)


def _scores(expression: Expression, data: Data, constants: np.ndarray) -> tuple[float, float]:
    prediction = expression.evaluate(data.XT, constants)
    prediction = np.broadcast_to(np.asarray(prediction, dtype=float), data.y.shape)
    if not np.all(np.isfinite(prediction)):
        return float("nan"), float("nan")
    residual = np.sum((data.y - prediction) ** 2)
    total = np.sum((data.y - data.y.mean()) ** 2)
    return float(residual / data.y.size), float(1.0 - residual / total)


def fit_prepared(
    expression: Expression, data: Data, method: str, seed: int, n_restarts: int, x0: np.ndarray | None
) -> FitResult:
    """Fit one expression on prepared data (no argument checks; see :func:`fit_constants`).

    The official per-expression step: a fresh ``np.random.seed(seed)`` start c0 ~ U(-1, 1)^k, then
    ``scipy.optimize.minimize(mse, c0, method=method)`` with SciPy's defaults; the best of all starts wins.
    ``x0`` (when given) is tried first; ``n_restarts`` may be 0 only with ``x0``."""
    k = expression.n_constants
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if k == 0:
            mse, r2 = _scores(expression, data, np.zeros(0))
            return FitResult(np.zeros(0), mse, r2, None, 0.0)
        draws = np.random.RandomState(seed)
        starts = [2 * draws.rand(k) - 1 for _ in range(n_restarts)]
        if x0 is not None:
            starts.insert(0, x0)

        def cost(c: np.ndarray) -> float:
            prediction = expression.evaluate(data.XT, c)
            return float(np.mean((prediction - data.y) ** 2))

        best: FitResult | None = None
        seconds = 0.0
        for start in starts:
            began = time.perf_counter()
            try:
                result = minimize(cost, start, method=method)
                constants, nit = np.asarray(result.x, dtype=float), int(result.get("nit", 0))
            except (RuntimeError, ValueError, ArithmeticError):
                constants, nit = np.asarray(start, dtype=float), 0
            seconds += time.perf_counter() - began
            mse, r2 = _scores(expression, data, constants)
            if best is None or (np.isfinite(r2) and not (best.r2 >= r2)):
                best = FitResult(constants, mse, r2, nit, 0.0)
        return FitResult(best.constants, best.mse, best.r2, best.nit, seconds)


def fit_constants(
    expression: Expression | str,
    X: np.ndarray,
    y: np.ndarray,
    method: str = "BFGS",
    seed: Seed = 0,
    n_restarts: int = 1,
    x0: Sequence[float] | None = None,
    standardize: bool = False,
) -> FitResult:
    """Fit an expression's constants by minimising the MSE with ``scipy.optimize.minimize``.

    ``n_restarts`` random starts c0 ~ U(-1, 1)^k from ``np.random.RandomState(seed)`` (the first equals the
    official start), plus ``x0`` when given; the lowest-MSE result is returned.  ``standardize`` applies the
    official preprocessing first (off by default here: the data are used as given).
    """
    if isinstance(expression, str):
        expression = parse_labelled(expression, "expression")[0]
    check_instance(expression, "expression", Expression, "an Expression or a string")
    method, seed = check_method(method), start_seed(seed)
    n_restarts = check_scalar(n_restarts, "n_restarts", "int", min=1)
    data = prepare_data(X, y, standardize)
    if expression.n_features > data.n_features:
        raise ValueError(f"X must have at least {expression.n_features} features for {expression.string}, "
                         f"got {data.n_features}")
    start = None
    if x0 is not None:
        start = check_array(x0, "x0", dtype=float).ravel()
        if start.size != expression.n_constants:
            raise ValueError(f"x0 must hold {expression.n_constants} values, got {x0!r}")
    return _fit_chunk([expression], data, method, seed, n_restarts, [start])[0]


def _fit_chunk(
    expressions: list[Expression],
    data: Data,
    method: str,
    seed: int,
    n_restarts: int,
    starts: list[np.ndarray | None],
) -> list[FitResult]:
    return [fit_prepared(e, data, method, seed, n_restarts, s) for e, s in zip(expressions, starts, strict=True)]


def fit_many(
    expressions: Sequence[Expression],
    data: Data,
    method: str = "BFGS",
    seed: Seed = 0,
    n_jobs: int = 1,
    n_restarts: int = 1,
    starts: Sequence[np.ndarray | None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[FitResult]:
    """Fit many expressions on prepared data, in a process pool when ``n_jobs`` > 1.

    Every expression restarts its random draws from ``seed``, so the results do not depend on the order,
    the chunking or ``n_jobs``.  ``progress(done, total)`` is called as chunks finish.  Worker processes
    inherit the caller's BLAS thread settings (one thread is fastest for these tiny fits; the reproduction
    runner sets it).
    """
    method, seed, n_jobs = check_method(method), start_seed(seed), check_n_jobs(n_jobs)
    n_restarts = check_scalar(n_restarts, "n_restarts", "int", min=0)
    expressions = check_sequence(expressions, "expressions")
    starts = [None] * len(expressions) if starts is None else check_sequence(starts, "starts")
    if len(starts) != len(expressions):
        raise ValueError(f"starts and expressions must have the same length, got {len(starts)} and {len(expressions)}")
    total = len(expressions)
    n_chunks = min(total, max(1, 8 * n_jobs))
    bounds = np.linspace(0, total, n_chunks + 1).astype(int)
    chunks = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    results: list[FitResult | None] = [None] * total
    done = 0
    if n_jobs == 1 or len(chunks) <= 1:
        for a, b in chunks:
            results[a:b] = _fit_chunk(expressions[a:b], data, method, seed, n_restarts, starts[a:b])
            done += b - a
            if progress is not None:
                progress(done, total)
        return results  # type: ignore[return-value]
    with ProcessPoolExecutor(max_workers=n_jobs) as pool:
        futures = {
            pool.submit(_fit_chunk, expressions[a:b], data, method, seed, n_restarts, starts[a:b]): (a, b)
            for a, b in chunks
        }
        for future in as_completed(futures):
            a, b = futures[future]
            results[a:b] = future.result()
            done += b - a
            if progress is not None:
                progress(done, total)
    return results  # type: ignore[return-value]
