"""The expression grammar of the APO search: operators, expression trees and exhaustive enumeration.

Conventions follow the official ``APO_File_Generator.py`` of Fong & Motani (ICML 2025):

* binary operators ``Pow, Mul, Add, Sub, Div`` with ``Pow(a, b) = |a|^b`` and unprotected ``Div``;
* a structure is a Karva string (k-expression): a head of ``head_length`` symbols from the operators and
  the leaf placeholder ``R``, then ``head_length + 1`` tail ``R``'s, decoded breadth first;
* the two children of ``Mul`` and ``Add`` are sorted by their string form (canonical structures);
* each ``R`` becomes a feature ``x<i>`` or a free constant; any operator whose two children are constants
  is folded into one constant, and constants are numbered ``c0, c1, ...`` left to right;
* the length of an expression is its node count (operators + features + constants) after folding.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import product
from typing import Any

import numpy as np

from icml25.utils.validation import check_array, check_scalar, check_sequence

OPERATORS: dict[str, tuple[int, bool]] = {
    "Pow": (2, False),
    "Mul": (2, True),
    "Add": (2, True),
    "Sub": (2, False),
    "Div": (2, False),
}
"""The paper's operator set: name -> (arity, symmetric)."""


def _pow(a: Any, b: Any) -> Any:
    return np.power(np.abs(a), b)


_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "Pow": _pow,
    "Mul": np.multiply,
    "Add": np.add,
    "Sub": np.subtract,
    "Div": np.true_divide,
}
_SCALAR: dict[str, Callable[[float, float], float]] = {
    "Pow": lambda a, b: float(np.power(np.abs(np.float64(a)), np.float64(b))),
    "Mul": lambda a, b: a * b,
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Div": lambda a, b: float(np.true_divide(np.float64(a), np.float64(b))),
}

# Trees are nested tuples: (op, left, right) for an operator, ("x", i) for feature i, ("c", j) for
# constant j.  Before numbering, a constant leaf carries its value instead (NaN when free).


def check_operators(operators: Iterable[str]) -> tuple[str, ...]:
    """Validate an operator subset of :data:`OPERATORS`; return it as a tuple in the given order."""
    if isinstance(operators, str):
        raise TypeError("operators must be a sequence of operator names, not a single string")
    names = tuple(check_sequence(operators, "operators"))
    if not names:
        raise ValueError("operators must name at least one operator")
    unknown = [n for n in names if n not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown operators {unknown}; allowed: {list(OPERATORS)}")
    if len(set(names)) != len(names):
        raise ValueError(f"operators must not repeat, got {list(names)}")
    return names


def check_head_length(head_length: int) -> int:
    """Validate a Karva head length (an integer >= 1)."""
    return check_scalar(head_length, "head_length", "int", min=1)


# ----------------------------------------------------------------------------------------------- structures


def decode_karva(symbols: Sequence[str], operators: Iterable[str] = tuple(OPERATORS)) -> str:
    """Decode a k-expression breadth first and return its canonical structure string.

    Each symbol fills the next open slot of a FIFO queue; an operator opens two child slots; decoding
    stops when the queue is empty (unused symbols are ignored).  ``Mul``/``Add`` children are sorted by
    their string form.  Example: ``["Sub", "Mul", "R", "R", "R"]`` -> ``"Sub(Mul(R,R),R)"``.
    """
    ops = set(check_operators(operators))
    symbols = check_sequence(symbols, "symbols")
    bad = [s for s in symbols if s != "R" and s not in ops]
    if bad:
        raise ValueError(f"unknown symbols {bad}; allowed: {sorted(ops)} and 'R'")
    if not symbols:
        raise ValueError("symbols must hold at least one symbol (a k-expression), got none")
    root: list = [symbols[0], []]
    queue = [root] if symbols[0] != "R" else []
    position = 1
    while queue:
        node = queue.pop(0)
        for _ in range(2):
            if position >= len(symbols):
                raise ValueError(f"k-expression {symbols} is too short to close its tree")
            child: list = [symbols[position], []]
            position += 1
            node[1].append(child)
            if child[0] != "R":
                queue.append(child)
    return _canonical_structure(root)


def _canonical_structure(node: list) -> str:
    if node[0] == "R":
        return "R"
    a, b = (_canonical_structure(child) for child in node[1])
    if OPERATORS[node[0]][1] and b < a:
        a, b = b, a
    return f"{node[0]}({a},{b})"


def enumerate_structures(head_length: int, operators: Iterable[str] = tuple(OPERATORS)) -> list[str]:
    """All distinct canonical structures of k-expressions with this head length (sorted by size, then name).

    Counts with the paper's five operators: 31 (head 2), 151 (head 3), 976 (head 4).
    """
    head_length = check_head_length(head_length)
    ops = check_operators(operators)
    tail = ["R"] * (head_length + 1)
    found = {decode_karva(list(head) + tail, ops) for head in product((*ops, "R"), repeat=head_length)}
    return sorted(found, key=lambda s: (s.count("("), s))


def complete_lengths(head_length: int) -> tuple[int, ...]:
    """Lengths at which the head-``h`` enumeration contains *every* tree of that size.

    A tree with k operators has its k-th operator at breadth-first position <= 2k - 1, so a head of
    length h holds every tree with k <= (h + 1) / 2 operators: lengths 1, 3, ..., 2 floor((h+1)/2) + 1.
    Longer enumerated lengths hold only the trees whose operators all sit in the head.
    """
    head_length = check_head_length(head_length)
    return tuple(range(1, 2 * ((head_length + 1) // 2) + 2, 2))


# ------------------------------------------------------------------------------------------------ expressions


class Expression:
    """One expression of the grammar, compiled once into a NumPy closure.

    ``Expression("Add(Mul(c0,x0),x1)")`` parses any syntax :func:`parse_expression` accepts (numeric
    literals become free constants).  Attributes: ``string`` (canonical text with ``x<i>`` features and
    ``c<j>`` constants), ``length`` (node count after constant folding), ``n_constants``, ``n_features``
    (largest feature index + 1).
    """

    __slots__ = ("_fn", "length", "n_constants", "n_features", "string", "tree")

    def __init__(self, text: str) -> None:
        expression, _ = parse_labelled(text, "text")
        self._init(expression.tree)

    @classmethod
    def from_tree(cls, tree: tuple) -> Expression:
        """Build from a numbered tree ``(op, left, right)`` / ``("x", i)`` / ``("c", j)``."""
        _check_tree(tree, "tree")
        expression = cls.__new__(cls)
        expression._init(tree)
        return expression

    def _init(self, tree: tuple) -> None:
        self.tree = tree
        self.string, self.length, self.n_constants, last_feature = _describe(tree)
        self.n_features = last_feature + 1
        self._fn: Callable[[np.ndarray, Any], Any] | None = None

    def __reduce__(self) -> tuple:
        return (Expression.from_tree, (self.tree,))

    def __repr__(self) -> str:
        return f"Expression({self.string!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and other.string == self.string

    def __hash__(self) -> int:
        return hash(self.string)

    @property
    def official_string(self) -> str:
        """The official code's spelling: features ``xdata[i]``, constants ``x[j]``."""
        return _to_string(self.tree, feature="xdata[{}]", constant="x[{}]")

    @property
    def structure(self) -> str:
        """The tree with every leaf replaced by ``R``."""
        return _to_string(self.tree, feature="R", constant="R")

    def commutative_key(self) -> str:
        """A key shared by all expressions equal up to swapping the children of ``Mul``/``Add``."""
        return _commutative_key(self.tree)

    def evaluate(self, XT: np.ndarray, constants: np.ndarray | Sequence[float] = ()) -> Any:
        """Fast evaluation: ``XT`` holds the features as rows (d >= n_features, n), ``constants`` the
        ``n_constants`` values (1-d).  NaN and inf propagate (as in :meth:`predict`).

        Returns an array, or a scalar for a constant-only expression.  Only the dimensions are checked up
        front (this is the optimisers' inner loop); a call that fails is diagnosed before its error surfaces.
        """
        if self._fn is None:
            self._fn = _compile(self.tree)
        if getattr(XT, "ndim", None) != 2 or getattr(constants, "ndim", 1) != 1:
            XT, constants = self._check_evaluate(XT, constants)
        try:
            return self._fn(XT, constants)
        except (TypeError, ValueError, IndexError, KeyError):
            self._check_evaluate(XT, constants)
            raise

    def _check_evaluate(self, XT: Any, constants: Any) -> tuple[np.ndarray, np.ndarray]:
        XT = check_array(XT, "XT", ndim=2, dtype=float, finite=False)
        if XT.shape[0] < self.n_features:
            raise ValueError(f"XT must have at least {self.n_features} rows (features) for {self.string}, "
                             f"got shape {XT.shape}")
        constants = check_array(constants, "constants", ndim=1, dtype=float, finite=False)
        if constants.size < self.n_constants:
            raise ValueError(f"constants must hold the {self.n_constants} constants of {self.string}, "
                             f"got {constants.size}")
        return XT, constants

    def predict(self, X: np.ndarray, constants: np.ndarray | Sequence[float] | None = None) -> np.ndarray:
        """f(X; constants) for X of shape (n, d) -> (n,); Pow is |a|^b, Div is unprotected (inf/NaN kept)."""
        X = check_array(X, "X", ndim=2, dtype=float, finite=False, min_len=1)
        if X.shape[1] < self.n_features:
            raise ValueError(f"{self.string} uses {self.n_features} features, X has {X.shape[1]}")
        values = np.zeros(0) if constants is None else check_array(constants, "constants", ndim=1, dtype=float)
        if values.size != self.n_constants:
            raise ValueError(f"{self.string} has {self.n_constants} constants, got {values.size}")
        with np.errstate(all="ignore"):
            out = self.evaluate(np.ascontiguousarray(X.T), values)
        return np.broadcast_to(np.asarray(out, dtype=float), (X.shape[0],)).copy()

    def to_sympy(self, constants: Sequence[float] | None = None) -> Any:
        """The expression as a SymPy expression (``Pow(a, b)`` -> ``Abs(a)**b``); needs ``sympy``."""
        try:
            import sympy
        except ImportError as exc:  # pragma: no cover - sympy is installed with torch here
            raise ImportError("Expression.to_sympy needs sympy: pip install sympy") from exc
        if constants is not None:
            constants = check_array(constants, "constants", ndim=1, dtype=float).tolist()
            if len(constants) != self.n_constants:
                raise ValueError(f"{self.string} has {self.n_constants} constants, got {len(constants)}")

        def build(node: tuple) -> Any:
            if node[0] == "x":
                return sympy.Symbol(f"x{node[1]}", real=True)
            if node[0] == "c":
                return sympy.Float(constants[node[1]]) if constants is not None else sympy.Symbol(f"c{node[1]}")
            a, b = build(node[1]), build(node[2])
            return {
                "Pow": lambda: sympy.Abs(a) ** b,
                "Mul": lambda: a * b,
                "Add": lambda: a + b,
                "Sub": lambda: a - b,
                "Div": lambda: a / b,
            }[node[0]]()

        return build(self.tree)


def _check_tree(tree: Any, name: str) -> None:
    """A ValueError/TypeError naming the first malformed node of ``tree``."""
    if not isinstance(tree, tuple) or not tree:
        raise TypeError(f"{name} must be a non-empty tuple node, got {tree!r}")
    if tree[0] in ("x", "c"):
        if len(tree) != 2 or isinstance(tree[1], bool) or not isinstance(tree[1], int) or tree[1] < 0:
            raise ValueError(f"{name} must be ('{tree[0]}', index >= 0), got {tree!r}")
        return
    if tree[0] not in OPERATORS or len(tree) != 3:
        raise ValueError(f"{name} must be (op, left, right) with op in {sorted(OPERATORS)}, or ('x', i) / ('c', j), "
                         f"got {tree!r}"[:200])
    _check_tree(tree[1], f"{name}[1]")
    _check_tree(tree[2], f"{name}[2]")


def _describe(tree: tuple) -> tuple[str, int, int, int]:
    """(string, node count, constant count, largest feature index or -1) in one pass."""
    if tree[0] == "x":
        return f"x{tree[1]}", 1, 0, tree[1]
    if tree[0] == "c":
        return f"c{tree[1]}", 1, 1, -1
    sa, la, ca, fa = _describe(tree[1])
    sb, lb, cb, fb = _describe(tree[2])
    return f"{tree[0]}({sa},{sb})", la + lb + 1, ca + cb, max(fa, fb)


def _to_string(tree: tuple, feature: str = "x{}", constant: str = "c{}") -> str:
    if tree[0] == "x":
        return feature.format(tree[1])
    if tree[0] == "c":
        return constant.format(tree[1])
    return f"{tree[0]}({_to_string(tree[1], feature, constant)},{_to_string(tree[2], feature, constant)})"


def _commutative_key(tree: tuple) -> str:
    if tree[0] == "x":
        return f"x{tree[1]}"
    if tree[0] == "c":
        return "c"
    a, b = _commutative_key(tree[1]), _commutative_key(tree[2])
    if OPERATORS[tree[0]][1] and b < a:
        a, b = b, a
    return f"{tree[0]}({a},{b})"


def _source(tree: tuple) -> str:
    if tree[0] == "x":
        return f"XT[{int(tree[1])}]"
    if tree[0] == "c":
        return f"c[{int(tree[1])}]"
    if tree[0] not in _FUNCTIONS:
        raise ValueError(f"unknown operator {tree[0]!r}")
    return f"{tree[0]}({_source(tree[1])},{_source(tree[2])})"


def _compile(tree: tuple) -> Callable[[np.ndarray, Any], Any]:
    """One NumPy function per expression, generated once from the validated tree (operator names and integer
    indices only; user text is never evaluated): no per-node Python calls and no string eval per call."""
    namespace: dict[str, Any] = {"__builtins__": {}, **_FUNCTIONS}
    return eval(f"lambda XT, c: {_source(tree)}", namespace)  # noqa: S307 - generated from a validated tree


def fold_and_number(raw: tuple) -> tuple[Expression, np.ndarray]:
    """Fold constant-only operators and number the constants left to right.

    ``raw`` is a tree whose constant leaves carry their value (``("c", value)``, NaN for a free constant).
    Folding two known values computes the operator; otherwise the folded constant is free (NaN).
    Returns the expression and the constants' values in the new order.
    """
    values: list[float] = []

    def fold(node: tuple) -> tuple:
        if len(node) != 3:
            return node
        left, right = fold(node[1]), fold(node[2])
        if left[0] == "c" and right[0] == "c":
            with np.errstate(all="ignore"):
                return ("c", _SCALAR[node[0]](left[1], right[1]))
        return (node[0], left, right)

    def number(node: tuple) -> tuple:
        if node[0] == "c":
            values.append(float(node[1]))
            return ("c", len(values) - 1)
        if node[0] == "x":
            return node
        return (node[0], number(node[1]), number(node[2]))

    tree = number(fold(raw))
    return Expression.from_tree(tree), np.array(values, dtype=float)


# -------------------------------------------------------------------------------------------------- parsing

_NAMES = {name.lower(): name for name in OPERATORS}
_BINOPS = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.Pow: "Pow"}
_FEATURE = re.compile(r"^[xX]_?(\d+)$")
_CONSTANT = re.compile(r"^c_?(\d+)$")


def parse_expression(text: str) -> tuple[Expression, np.ndarray]:
    """Parse an SR method's expression into the grammar; return it with its constants' values.

    Accepted (mixable) syntaxes: our prefix form ``Add(Mul(c0,x0),x1)``, the official form
    ``Add(Mul(x[0],xdata[0]),xdata[1])`` (``xdata[i]`` = feature i, ``x[j]`` = constant j), gplearn's
    ``add(mul(X0, X1), 0.5)`` and infix ``2.5*x0*x1 - x2/x1``, ``x0**2`` (``**`` is Pow = |a|^b).
    Features: ``x0``, ``X0``, ``x_0``, ``xdata[0]``; free constants: ``c0``, ``c_0``, ``x[0]``; numbers
    become constants with that value (unary minus included).  Constant-only operators are folded.
    The returned values hold NaN for free constants.  Anything outside {+, -, *, /, pow} raises ValueError.
    """
    return parse_labelled(text, "text")


def parse_labelled(text: Any, name: str) -> tuple[Expression, np.ndarray]:
    """:func:`parse_expression` with the argument's ``name`` in the messages."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be an expression string, got {type(text).__name__}")
    try:
        body = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"{name}: cannot parse expression {text!r}: {exc.msg}") from exc
    try:
        return fold_and_number(_from_ast(body, text))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _from_ast(node: ast.AST, text: str) -> tuple:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return (_BINOPS[type(node.op)], _from_ast(node.left, text), _from_ast(node.right, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _from_ast(node.operand, text)
        if isinstance(node.op, ast.UAdd):
            return inner
        return ("c", -inner[1]) if inner[0] == "c" and not np.isnan(inner[1]) else ("Mul", ("c", -1.0), inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return ("c", float(node.value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.lower() in _NAMES:
        if len(node.args) != 2 or node.keywords:
            raise ValueError(f"{node.func.id} takes exactly two arguments in {text!r}")
        return (_NAMES[node.func.id.lower()], _from_ast(node.args[0], text), _from_ast(node.args[1], text))
    if isinstance(node, ast.Name):
        if match := _FEATURE.match(node.id):
            return ("x", int(match.group(1)))
        if _CONSTANT.match(node.id):
            return ("c", float("nan"))
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("x", "xdata")
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        return ("x", node.slice.value) if node.value.id == "xdata" else ("c", float("nan"))
    snippet = ast.get_source_segment(text.strip(), node) or type(node).__name__
    raise ValueError(
        f"{snippet!r} in {text!r} is outside the grammar: use features x0.., constants c0.. or numbers, "
        f"and only {list(OPERATORS)} (or + - * / **)"
    )


# ---------------------------------------------------------------------------------------------- enumeration


def _fills(structure: tuple | str, n_features: int, memo: dict) -> frozenset[tuple]:
    """All folded raw trees obtained by filling a structure's leaves with features or a free constant."""
    if structure not in memo:
        if structure == "R":
            memo[structure] = frozenset([("x", i) for i in range(n_features)] + [("c", "free")])
        else:
            op, left, right = structure
            memo[structure] = frozenset(
                ("c", "free") if a[0] == "c" and b[0] == "c" else (op, a, b)
                for a in _fills(left, n_features, memo)
                for b in _fills(right, n_features, memo)
            )
    return memo[structure]


def _structure_tree(text: str) -> tuple | str:
    if text == "R":
        return "R"
    body = ast.parse(text, mode="eval").body

    def build(node: ast.AST) -> tuple | str:
        if isinstance(node, ast.Name):
            return "R"
        return (node.func.id, build(node.args[0]), build(node.args[1]))

    return build(body)


def count_fills(head_length: int, n_features: int, operators: Iterable[str] = tuple(OPERATORS)) -> int:
    """Leaf assignments before deduplication, sum over structures of (d + 1)^#leaves (an upper bound)."""
    n_features = check_scalar(n_features, "n_features", "int", min=1)
    return sum((n_features + 1) ** s.count("R") for s in enumerate_structures(head_length, operators))


def enumerate_expressions(
    n_features: int, head_length: int, operators: Iterable[str] = tuple(OPERATORS)
) -> list[Expression]:
    """Every distinct expression of the grammar (sorted by length, then string).

    Each structure's leaves become features ``x0..x<d-1>`` or free constants, constants are folded and
    numbered, duplicates (same string) are removed.  Counts with the five operators: d = 3 -> 1,579
    (head 2) and 26,254 (head 3); d = 5, head 3 -> 137,556.
    """
    n_features = check_scalar(n_features, "n_features", "int", min=1)
    found: set[tuple] = set()
    memo: dict = {}
    for text in enumerate_structures(head_length, operators):
        found |= _fills(_structure_tree(text), n_features, memo)
    expressions = [fold_and_number(_free_to_nan(raw))[0] for raw in found]
    return sorted(expressions, key=lambda e: (e.length, e.string))


def _free_to_nan(raw: tuple) -> tuple:
    if raw[0] == "c":
        return ("c", float("nan"))
    if raw[0] == "x":
        return raw
    return (raw[0], _free_to_nan(raw[1]), _free_to_nan(raw[2]))
