"""The absolute Pareto-optimal (APO) front: exhaustive search, front table, CSV I/O, scoring SR methods."""

from __future__ import annotations

import csv
import math
import re
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from icml25.symbolic.sr_pareto_fronts.fitting import (
    SCIPY_METHODS,
    FitResult,
    check_method,
    check_n_jobs,
    fit_many,
    prepare_data,
    start_seed,
)
from icml25.symbolic.sr_pareto_fronts.grammar import (
    OPERATORS,
    Expression,
    check_head_length,
    check_operators,
    count_fills,
    enumerate_expressions,
    parse_expression,
    parse_labelled,
)
from icml25.utils.random import Seed
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar, check_sequence

COLUMNS = ("EquationLength", "EquationStructure", "EquationParameters", "NumericalIterations", "MSE", "R2")
"""The official CSV columns (the official files add ``EquationLambda``, ignored on reading)."""
HEAVY_FILLS = 1_000_000
"""Above this many leaf assignments (e.g. head 4 with d >= 4) ``apo_front`` needs ``max_expressions`` or ``force``."""


@dataclass(frozen=True)
class FrontRow:
    """One fitted expression: a row of the official table.  ``mse``/``r2`` are None for a failed fit
    (prediction with NaN/inf); ``nit`` is None without constants; MSE is in the original y units."""

    length: int
    structure: str
    parameters: tuple[float, ...]
    nit: int | None
    mse: float | None
    r2: float | None

    @property
    def expression(self) -> Expression:
        return Expression(self.structure)


def _official_order(rows: Iterable[FrontRow]) -> list[FrontRow]:
    """R^2 descending (failed last), then length ascending, then structure descending (as the official code)."""
    rows = sorted(rows, key=lambda r: r.structure, reverse=True)
    return sorted(rows, key=lambda r: (r.r2 is None, -(r.r2 or 0.0), r.length))


def hypervolume(lengths: Sequence[int], r2: Sequence[float], max_length: int) -> float:
    """Area dominated by (length, R^2) points with reference point (max_length + 1, R^2 = 0).

    Lower length and higher R^2 are better; points longer than ``max_length``, negative R^2 and ``None``
    (a failed fit) count nothing.  ``lengths``: integers >= 1; ``r2``: finite numbers or None, one per length.
    """
    lengths = check_sequence(lengths, "lengths", item=lambda v, name: check_scalar(v, name, "int", min=1))
    r2 = check_sequence(r2, "r2", item=lambda v, name: None if v is None else check_scalar(v, name, "real"))
    if len(lengths) != len(r2):
        raise ValueError(f"lengths and r2 must have the same length, got {len(lengths)} and {len(r2)}")
    max_length = check_scalar(max_length, "max_length", "int", min=1)
    best: dict[int, float] = {}
    for length, value in zip(lengths, r2, strict=True):
        if value is not None and length <= max_length:
            best[int(length)] = max(best.get(int(length), 0.0), float(value))
    area, running = 0.0, 0.0
    steps = sorted(best)
    for i, length in enumerate(steps):
        running = max(running, best[length])
        upper = steps[i + 1] if i + 1 < len(steps) else max_length + 1
        area += (upper - length) * running
    return area


@dataclass
class APOFront:
    """The result of the exhaustive search on one dataset (or a front read from CSV).

    ``rows`` is the full table in the official order.  :meth:`best_per_length` is what the official summary
    CSVs hold; :meth:`pareto_front` keeps the lengths whose best R^2 strictly beats every shorter length.
    Metadata (head length, features, optimiser, seed, preprocessing) is None when unknown.
    """

    rows: list[FrontRow]
    head_length: int | None = None
    n_features: int | None = None
    method: str | None = None
    seed: int | None = None
    standardize: bool = True
    operators: tuple[str, ...] = tuple(OPERATORS)
    seconds: float = 0.0
    wall_seconds: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rows = _official_order(self.rows)

    @property
    def n_failed(self) -> int:
        return sum(r.r2 is None for r in self.rows)

    @property
    def max_length(self) -> int:
        return max(r.length for r in self.rows)

    def best_per_length(self) -> list[FrontRow]:
        """The best-R^2 expression of every length (ascending length); may be non-monotone in R^2."""
        best: dict[int, FrontRow] = {}
        for row in self.rows:  # official order: the first row of a length is its best
            if row.r2 is not None and row.length not in best:
                best[row.length] = row
        return [best[length] for length in sorted(best)]

    def pareto_front(self) -> list[FrontRow]:
        """Non-dominated points: lengths whose best R^2 strictly exceeds the best R^2 of all shorter lengths."""
        front, record = [], -math.inf
        for row in self.best_per_length():
            if row.r2 > record:
                front.append(row)
                record = row.r2
        return front

    def r2_at(self, length: int) -> float | None:
        """The best R^2 over expressions of exactly this length (None if the search has none)."""
        length = check_scalar(length, "length", "int", min=1)
        return next((r.r2 for r in self.best_per_length() if r.length == length), None)

    def hypervolume(self, max_length: int | None = None) -> float:
        """:func:`hypervolume` of the best-per-length points (reference length: ``max_length`` + 1)."""
        rows = self.best_per_length()
        max_length = self.max_length if max_length is None else check_scalar(max_length, "max_length", "int", min=1)
        return hypervolume([r.length for r in rows], [r.r2 for r in rows], max_length)

    def columns(self, which: str = "table") -> dict[str, list]:
        """Column name -> values (``pandas.DataFrame(front.columns())`` gives the official table)."""
        rows = self._select(which)
        values = [(r.length, r.structure, r.parameters, r.nit, r.mse, r.r2) for r in rows]
        return {name: [v[i] for v in values] for i, name in enumerate(COLUMNS)}

    def _select(self, which: str) -> list[FrontRow]:
        choices = {"table": lambda: self.rows, "best": self.best_per_length, "front": self.pareto_front}
        check_choice(which, "which", choices)
        return list(choices[which]())

    def to_csv(self, path: str | Path, which: str = "best", style: str = "icml25") -> Path:
        """Write the table (``which="table"``), the best per length (official summary files, default) or the
        Pareto front.  ``style="official"`` spells expressions as the official code (``xdata[i]``, ``x[j]``)."""
        check_choice(style, "style", ("icml25", "official"))
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for row in self._select(which):
                text = row.structure if style == "icml25" else Expression(row.structure).official_string
                writer.writerow([
                    row.length,
                    text,
                    "[" + ", ".join(repr(float(v)) for v in row.parameters) + "]" if row.parameters else "",
                    "" if row.nit is None else row.nit,
                    "" if row.mse is None else repr(float(row.mse)),
                    "" if row.r2 is None else repr(float(row.r2)),
                ])
        return path

    def score(self, expressions: Iterable[Any], X: np.ndarray, y: np.ndarray, **kwargs: Any) -> Scorecard:
        """Shortcut for :func:`score_against_front` with this front."""
        return score_against_front(self, expressions, X, y, **kwargs)


def _parse_number(text: str) -> float | None:
    text = text.strip()
    return None if text in ("", "None", "nan", "NaN") else float(text)


def read_front(path: str | Path) -> APOFront:
    """Read a front written by :meth:`APOFront.to_csv` or an official ``*_summary.csv`` file.

    Lengths are checked against the node count of each expression (ValueError on mismatch)."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path} lacks the columns {missing}; expected {list(COLUMNS)}")
        rows = []
        for line, record in enumerate(reader, start=2):
            expression, _ = parse_expression(record["EquationStructure"])
            length = int(float(record["EquationLength"]))
            if length != expression.length:
                raise ValueError(
                    f"{path}:{line}: EquationLength {length} but {expression.string} has {expression.length} nodes"
                )
            cell = record["EquationParameters"].strip().strip("[]")
            parameters = tuple(float(v) for v in re.split(r"[,\s]+", cell) if v)
            if len(parameters) != expression.n_constants:
                raise ValueError(f"{path}:{line}: {len(parameters)} parameters for {expression.n_constants} constants")
            nit = _parse_number(record["NumericalIterations"])
            rows.append(FrontRow(length, expression.string, parameters, None if nit is None else int(nit),
                                 _parse_number(record["MSE"]), _parse_number(record["R2"])))
    if not rows:
        raise ValueError(f"{path} holds no expressions")
    return APOFront(rows)


def _row(expression: Expression, fit: FitResult, y_std: float) -> FrontRow:
    ok = not fit.failed
    return FrontRow(
        expression.length,
        expression.string,
        tuple(float(v) for v in fit.constants),
        fit.nit,
        fit.mse * y_std**2 if ok else None,
        fit.r2 if ok else None,
    )


def apo_front(
    X: np.ndarray,
    y: np.ndarray,
    head_length: int = 3,
    method: str = "BFGS",
    seed: Seed = 11284,
    standardize: bool = True,
    n_jobs: int = 1,
    max_expressions: int | None = None,
    force: bool = False,
    operators: Iterable[str] = tuple(OPERATORS),
    progress: Callable[[int, int], None] | None = None,
) -> APOFront:
    """Exhaustive search of the paper: fit every expression of the grammar and tabulate length vs R^2.

    All rows are used for fitting and scoring (training R^2).  Every expression's constants start from
    ``np.random.RandomState(seed)`` (the official reset per expression), so ``n_jobs`` does not change the
    result.  Heavy searches (more than :data:`HEAVY_FILLS` leaf assignments, e.g. head 4 with d >= 4) need
    ``max_expressions`` (a seeded random subset) or ``force=True``.
    """
    began = time.perf_counter()
    data = prepare_data(X, y, standardize)
    head_length, ops = check_head_length(head_length), check_operators(operators)
    method, seed, n_jobs = check_method(method), start_seed(seed), check_n_jobs(n_jobs)
    if max_expressions is not None:
        max_expressions = check_scalar(max_expressions, "max_expressions", "int", min=1)
    check_bool(force, "force")
    fills = count_fills(head_length, data.n_features, ops)
    if fills > HEAVY_FILLS:
        message = (
            f"head_length={head_length} with {data.n_features} features means up to {fills:,} candidate "
            "expressions (millions of fits)"
        )
        if max_expressions is None and not force:
            raise ValueError(message + "; pass max_expressions=N or force=True")
        warnings.warn(message, stacklevel=2)
    expressions = enumerate_expressions(data.n_features, head_length, ops)
    if max_expressions is not None and max_expressions < len(expressions):
        keep = np.sort(np.random.RandomState(seed).permutation(len(expressions))[:max_expressions])
        expressions = [expressions[i] for i in keep]
    fits = fit_many(expressions, data, method, seed, n_jobs, progress=progress)
    return APOFront(
        [_row(e, f, data.y_std) for e, f in zip(expressions, fits, strict=True)],
        head_length=head_length,
        n_features=data.n_features,
        method=method,
        seed=seed,
        standardize=standardize,
        operators=ops,
        seconds=float(sum(f.seconds for f in fits)),
        wall_seconds=time.perf_counter() - began,
        metadata={"n_expressions": len(expressions), "max_expressions": max_expressions},
    )


def compare_optimizers(
    X: np.ndarray, y: np.ndarray, methods: Sequence[str] = SCIPY_METHODS, **kwargs: Any
) -> dict[str, APOFront]:
    """Run :func:`apo_front` once per optimiser (same data, seed and grammar): method -> front.

    Each front's ``seconds`` is its total optimisation time, ``best_per_length()`` its best R^2 per length."""
    names = [check_method(m) for m in check_sequence(methods, "methods")]
    if not names:
        raise ValueError("methods must name at least one optimiser")
    return {name: apo_front(X, y, method=name, **kwargs) for name in names}


# ---------------------------------------------------------------------------------------------------- scoring


@lru_cache(maxsize=16)
def grammar_keys(n_features: int, head_length: int, operators: tuple[str, ...] = tuple(OPERATORS)) -> frozenset[str]:
    """Commutative keys of every expression the head-``h`` search enumerates (membership test)."""
    return frozenset(e.commutative_key() for e in enumerate_expressions(n_features, head_length, operators))


@dataclass(frozen=True)
class ScoredExpression:
    """One SR expression scored against a front.  ``apo_r2`` is the front's best R^2 at the same length (None
    beyond the front); ``in_grammar`` says whether the front's search enumerates it (up to swapping ``Mul``/``Add``
    children), None when the front's grammar is unknown."""

    expression: str
    length: int
    constants: tuple[float, ...]
    r2: float | None
    mse: float | None
    apo_r2: float | None
    in_grammar: bool | None

    @property
    def gap(self) -> float | None:
        """APO R^2 minus this expression's R^2 (>= 0 when the front holds)."""
        return None if self.r2 is None or self.apo_r2 is None else self.apo_r2 - self.r2


@dataclass
class Scorecard:
    """An SR method's expressions against an APO front (see :func:`score_against_front`)."""

    rows: list[ScoredExpression]
    front: APOFront
    tolerance: float

    def compared(self) -> list[ScoredExpression]:
        """Rows the front speaks for: finite R^2, length <= the front's longest, and inside its grammar."""
        return [r for r in self.rows if r.gap is not None and r.in_grammar is not False]

    def exceedances(self) -> list[ScoredExpression]:
        """Compared rows with R^2 above the front by more than ``tolerance`` (local-optimiser misses)."""
        return [r for r in self.compared() if r.gap < -self.tolerance]

    def outside_above_front(self) -> list[ScoredExpression]:
        """Rows outside the front's grammar that beat it at their length: proof that the head-length enumeration is
        not exhaustive at that length (it is exhaustive only at ``complete_lengths(head_length)``)."""
        return [r for r in self.rows if r.in_grammar is False and r.gap is not None and r.gap < -self.tolerance]

    def per_length(self) -> list[dict[str, Any]]:
        """For every compared length: count, the method's best R^2, the APO R^2 and the gap APO - method."""
        out = []
        for length in sorted({r.length for r in self.compared()}):
            rows = [r for r in self.compared() if r.length == length]
            best = max(r.r2 for r in rows)
            out.append({"length": length, "n": len(rows), "best_r2": best, "apo_r2": rows[0].apo_r2,
                        "gap": rows[0].apo_r2 - best})
        return out

    def hypervolume(self) -> float:
        """Hypervolume of the compared rows with the front's reference point (length max + 1, R^2 = 0)."""
        rows = self.compared()
        return hypervolume([r.length for r in rows], [r.r2 for r in rows], self.front.max_length)

    def summary(self) -> dict[str, Any]:
        """JSON-able summary: counts, exceedances, largest excess, hypervolumes, per-length gaps."""
        compared, over = self.compared(), self.exceedances()
        return {
            "n_expressions": len(self.rows),
            "n_failed": sum(r.r2 is None for r in self.rows),
            "n_outside_grammar": sum(r.in_grammar is False for r in self.rows),
            "n_compared": len(compared),
            "n_exceedances": len(over),
            "exceedance_fraction": len(over) / len(compared) if compared else 0.0,
            "max_excess": max((-r.gap for r in compared), default=0.0),
            "exceeding": [r.expression for r in over],
            "outside_above_front": [r.expression for r in self.outside_above_front()],
            "hypervolume": self.hypervolume(),
            "apo_hypervolume": self.front.hypervolume(),
            "per_length": self.per_length(),
        }

    def to_csv(self, path: str | Path) -> Path:
        """One line per scored expression."""
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["EquationLength", "EquationStructure", "EquationParameters", "R2", "APO_R2", "Gap",
                             "InGrammar"])
            for r in self.rows:
                writer.writerow([r.length, r.expression, list(r.constants), r.r2, r.apo_r2, r.gap, r.in_grammar])
        return path


def _as_expression(item: Any, name: str) -> tuple[Expression, np.ndarray]:
    if isinstance(item, tuple) and len(item) == 2:
        expression, values = _as_expression(item[0], name)
        given = np.asarray(item[1], dtype=float).ravel()
        if given.size != expression.n_constants:
            raise ValueError(f"{expression.string} has {expression.n_constants} constants, got {given.size} values")
        return expression, given
    if isinstance(item, Expression):
        return item, np.full(item.n_constants, np.nan)
    if isinstance(item, str):
        return parse_labelled(item, name)
    raise TypeError(f"{name}: an expression must be a string, an Expression or (expression, constants), got {item!r}")


def score_against_front(
    front: APOFront,
    expressions: Iterable[Any],
    X: np.ndarray,
    y: np.ndarray,
    standardize: bool | None = None,
    refit: bool = True,
    method: str = "BFGS",
    n_restarts: int = 3,
    seed: Seed = 0,
    head_length: int | None = None,
    tolerance: float = 1e-6,
    n_jobs: int = 1,
) -> Scorecard:
    """Score any SR method's expressions against an APO front in one call.

    ``expressions``: strings in any syntax of :func:`parse_expression` (infix, gplearn, official, ours),
    :class:`Expression` objects or ``(expression, constants)`` pairs.  Each is mapped to the grammar and its
    length convention (node count after constant folding) and, with ``refit``, its constants are refit with
    ``method`` from ``n_restarts`` random starts plus its own values (the best wins); without ``refit`` the
    given values are used.  R^2 is the training R^2 on (X, y) preprocessed like the front (``standardize``
    defaults to the front's).  ``head_length`` (default: the front's) enables the grammar-membership test.
    """
    check_instance(front, "front", APOFront)
    tolerance = check_scalar(tolerance, "tolerance", "real", min=0.0)
    check_bool(refit, "refit")
    data = prepare_data(X, y, front.standardize if standardize is None else standardize)
    items = [_as_expression(item, f"expressions[{i}]")
             for i, item in enumerate(check_sequence(expressions, "expressions", min_len=1))]
    for expression, _ in items:
        if expression.n_features > data.n_features:
            raise ValueError(f"{expression.string} uses {expression.n_features} features, X has {data.n_features}")
    if refit:
        n_restarts = check_scalar(n_restarts, "n_restarts", "int", min=1)
        starts = [v if v.size and np.all(np.isfinite(v)) else None for _, v in items]
        fits = fit_many([e for e, _ in items], data, method, start_seed(seed), n_jobs, n_restarts, starts)
    else:
        fits = []
        for expression, values in items:
            if not np.all(np.isfinite(values)):
                raise ValueError(f"refit=False needs values for every constant of {expression.string}")
            with np.errstate(all="ignore"):
                prediction = np.broadcast_to(np.asarray(expression.evaluate(data.XT, values), dtype=float),
                                             data.y.shape)
            ok = np.all(np.isfinite(prediction))
            residual = float(np.sum((data.y - prediction) ** 2)) if ok else math.nan
            fits.append(FitResult(values, residual / data.y.size,
                                  1 - residual / float(np.sum((data.y - data.y.mean()) ** 2)), None, 0.0))
    head = head_length if head_length is not None else front.head_length
    keys = grammar_keys(data.n_features, check_head_length(head), front.operators) if head is not None else None
    best = {r.length: r.r2 for r in front.best_per_length()}
    rows = []
    for (expression, _), fit in zip(items, fits, strict=True):
        ok = not fit.failed
        rows.append(ScoredExpression(
            expression=expression.string,
            length=expression.length,
            constants=tuple(float(v) for v in fit.constants),
            r2=fit.r2 if ok else None,
            mse=fit.mse * data.y_std**2 if ok else None,
            apo_r2=best.get(expression.length) if expression.length <= front.max_length else None,
            in_grammar=None if keys is None else expression.commutative_key() in keys,
        ))
    return Scorecard(rows, front, float(tolerance))
