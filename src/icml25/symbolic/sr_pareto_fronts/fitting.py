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
from threadpoolctl import threadpool_limits

from icml25.symbolic.sr_pareto_fronts.grammar import Expression

SCIPY_METHODS: tuple[str, ...] = ("BFGS", "CG", "L-BFGS-B", "Nelder-Mead", "Powell", "SLSQP", "TNC", "trust-constr")
"""The eight ``scipy.optimize.minimize`` methods compared in the paper (finite-difference gradients)."""


def check_method(method: str) -> str:
    """Return SciPy's spelling of an optimiser name (case-insensitive) or raise ValueError."""
    if isinstance(method, str):
        for name in SCIPY_METHODS:
            if name.lower() == method.lower():
                return name
    raise ValueError(f"unknown optimiser {method!r}; supported scipy.optimize.minimize methods: {list(SCIPY_METHODS)}")


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    return int(seed)


def check_n_jobs(n_jobs: int) -> int:
    """``n_jobs`` >= 1 workers, or -1 for all cores."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or not (n_jobs >= 1 or n_jobs == -1):
        raise ValueError(f"n_jobs must be an integer >= 1 or -1 (all cores), got {n_jobs!r}")
    return (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)


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
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if X.shape[1] == 0:
        raise ValueError("X must have at least one feature")
    if X.shape[0] < 3:
        raise ValueError(f"need at least 3 rows for R^2, got {X.shape[0]}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must not contain NaN or inf")
    if np.var(y) == 0:
        raise ValueError("y is constant: R^2 is undefined")
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


def _fit(
    expression: Expression, data: Data, method: str, seed: int, n_restarts: int, x0: np.ndarray | None
) -> FitResult:
    """The official per-expression step: a fresh ``np.random.seed(seed)`` start c0 ~ U(-1, 1)^k, then
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
    seed: int = 0,
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
        expression = Expression(expression)
    if not isinstance(expression, Expression):
        raise TypeError(f"expression must be an Expression or a string, got {type(expression).__name__}")
    method, seed = check_method(method), check_seed(seed)
    if isinstance(n_restarts, bool) or not isinstance(n_restarts, (int, np.integer)) or n_restarts < 1:
        raise ValueError(f"n_restarts must be an integer >= 1, got {n_restarts!r}")
    data = prepare_data(X, y, standardize)
    if expression.n_features > data.n_features:
        raise ValueError(f"{expression.string} uses {expression.n_features} features, X has {data.n_features}")
    start = None
    if x0 is not None:
        start = np.asarray(x0, dtype=float).ravel()
        if start.size != expression.n_constants or not np.all(np.isfinite(start)):
            raise ValueError(f"x0 must hold {expression.n_constants} finite values, got {x0!r}")
    return _fit_chunk([expression], data, method, seed, int(n_restarts), [start])[0]


def _fit_chunk(
    expressions: list[Expression],
    data: Data,
    method: str,
    seed: int,
    n_restarts: int,
    starts: list[np.ndarray | None],
) -> list[FitResult]:
    # One BLAS thread: L-BFGS-B's tiny linear algebra is ~100x slower with threaded OpenBLAS on a busy machine.
    with threadpool_limits(1, user_api="blas"):
        return [_fit(e, data, method, seed, n_restarts, s) for e, s in zip(expressions, starts, strict=True)]


def fit_many(
    expressions: Sequence[Expression],
    data: Data,
    method: str = "BFGS",
    seed: int = 0,
    n_jobs: int = 1,
    n_restarts: int = 1,
    starts: Sequence[np.ndarray | None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[FitResult]:
    """Fit many expressions on prepared data, in a process pool when ``n_jobs`` > 1.

    Every expression restarts its random draws from ``seed``, so the results do not depend on the order,
    the chunking or ``n_jobs``.  ``progress(done, total)`` is called as chunks finish.
    """
    method, seed, n_jobs = check_method(method), check_seed(seed), check_n_jobs(n_jobs)
    expressions = list(expressions)
    starts = [None] * len(expressions) if starts is None else list(starts)
    if len(starts) != len(expressions):
        raise ValueError(f"starts has {len(starts)} entries for {len(expressions)} expressions")
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
