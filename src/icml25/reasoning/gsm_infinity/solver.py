"""The independent solver: re-solves a problem from its structured equations alone.

It never sees the generator's graph.  Realistic problems state only *instance* parameters; the
solver re-derives every implicit aggregate from which instance parameters the text mentions
(the hierarchy rule of the prompt), evaluates in topological order (``networkx``) and, in
reverse mode, solves the one linear equation in the hidden quantity exactly.
"""

from __future__ import annotations

from fractions import Fraction

import networkx as nx

from icml25.reasoning.gsm_infinity.problem import Problem
from icml25.utils.validation import check_choice, check_instance, check_scalar, check_sequence

RNG = "RNG"


class SolverError(ValueError):
    """The equations do not determine the asked quantity (missing, cyclic, nonlinear or non-integral)."""


def split_key(key: str) -> tuple[str, ...]:
    """Split a parameter key ``"I01|place|member"`` into ``("I01", "place", "member")``."""
    parts = tuple(key.split("|"))
    arity = {"I01": 3, "I12": 3, "A01": 2, "A02": 3}
    if parts[0] not in arity or len(parts) != arity[parts[0]]:
        raise SolverError(f"unknown parameter key {key!r}")
    return parts


def equation_cost(eq: dict) -> int:
    """Operations in one stated equation: its in-degree, a constant counting as one dependency."""
    op = eq["op"]
    if op in ("const", "copy"):
        return 1
    if op in ("sub", "mul"):
        return 2
    if op == "add":
        return len(eq["args"]) + (1 if eq.get("const") else 0)
    raise SolverError(f"unknown equation op {op!r}")


def _apply(eq: dict, values: list) -> object:
    op, const = eq["op"], eq.get("const")
    if op == "const":
        return const
    if op == "copy":
        return values[0]
    if op == "add":
        return sum(values[1:], values[0]) + (const or 0)
    if op == "sub":
        return values[0] - (values[1] if len(values) == 2 else const)
    if op == "mul":
        return values[0] * const
    raise SolverError(f"unknown equation op {op!r}")


def solve_symbolic(equations: list[dict], value: int) -> tuple[list[str], int]:
    """Variables derivable from the assignments whose value equals ``value``, and the op count.

    A variable is derivable when it is assigned a constant or computed from derivable variables
    (variables on a cycle never are); the op count is the number of derivable assignments.
    Returns ``(sorted names, op)``.
    """
    equations = _check_equations(equations)
    value = check_scalar(value, "value", "int")
    defs: dict[str, dict] = {}
    users: dict[str, list[str]] = {}
    for eq in equations:
        if eq["op"] == "given":
            raise SolverError("symbolic problems have no 'given' equations")
        if eq["target"] in defs:
            raise SolverError(f"variable {eq['target']} is assigned twice")
        defs[eq["target"]] = eq
        for arg in eq["args"]:
            users.setdefault(arg, []).append(eq["target"])
    values: dict[str, int] = {}
    ready = [name for name, eq in defs.items() if not eq["args"]]
    while ready:  # propagate from the constant assignments (Kahn's order over derivable variables)
        name = ready.pop()
        eq = defs[name]
        values[name] = _apply(eq, [values[arg] for arg in eq["args"]])
        for user in users.get(name, []):
            if user not in values and all(arg in values for arg in defs[user]["args"]):
                ready.append(user)
    return sorted(name for name, v in values.items() if v == value), len(values)


class _Linear:
    """``a * x + b`` with exact rationals: the value of a quantity in terms of the hidden one."""

    __slots__ = ("a", "b")

    def __init__(self, a: Fraction | int, b: Fraction | int) -> None:
        self.a, self.b = Fraction(a), Fraction(b)

    def __add__(self, other: object) -> _Linear:
        other = other if isinstance(other, _Linear) else _Linear(0, other)
        return _Linear(self.a + other.a, self.b + other.b)

    __radd__ = __add__

    def __sub__(self, other: object) -> _Linear:
        other = other if isinstance(other, _Linear) else _Linear(0, other)
        return _Linear(self.a - other.a, self.b - other.b)

    def __mul__(self, other: object) -> _Linear:
        other = other if isinstance(other, _Linear) else _Linear(0, other)
        if self.a and other.a:
            raise SolverError("the hidden quantity enters nonlinearly (a product of two unknowns)")
        return _Linear(self.a * other.b + other.a * self.b, self.b * other.b)


def solve_realistic(equations: list[dict], query: str, mode: str = "forward") -> tuple[int, int]:
    """Value of ``query`` (forward) or of the hidden ``query`` (reverse), and the op count.

    Aggregates ``A01|p`` (sum of ``I01|p|m`` over mentioned members ``m``) and ``A02|p|c`` (sum of
    ``I01|p|m * I12|m|c``) are rebuilt from the mentioned instance parameters.  The op count is the
    sum of in-degrees over the quantities the answer depends on (a constant is one dependency; the
    hidden quantity counts its one hidden constant).  Raises ``SolverError`` if undetermined.
    """
    check_choice(mode, "mode", ("forward", "reverse"))
    equations = _check_equations(equations)
    check_instance(query, "query", str, "a parameter key string")
    try:
        split_key(query)
    except SolverError:
        raise SolverError(f"query must be a parameter key like 'I01|place|member', got {query!r}") from None
    defs: dict[str, dict] = {}
    givens: list[dict] = []
    mentioned: set[str] = {query}
    for eq in equations:
        split_key(eq["target"])
        mentioned.add(eq["target"])
        mentioned.update(eq["args"])
        if eq["op"] == "given":
            givens.append(eq)
        elif eq["target"] in defs:
            raise SolverError(f"{eq['target']} is defined twice")
        else:
            defs[eq["target"]] = eq
    members: dict[str, list[str]] = {}
    per_member: dict[str, list[str]] = {}
    for key in sorted(mentioned):
        parts = split_key(key)
        if parts[0] == "I01":
            members.setdefault(parts[1], []).append(parts[2])
        elif parts[0] == "I12":
            per_member.setdefault(parts[1], []).append(parts[2])

    def deps(key: str) -> list[str]:
        parts = split_key(key)
        if parts[0] == "A01":
            return [f"I01|{parts[1]}|{m}" for m in members.get(parts[1], [])]
        if parts[0] == "A02":
            out = []
            for m in members.get(parts[1], []):
                if parts[2] in per_member.get(m, []):
                    out += [f"I01|{parts[1]}|{m}", f"I12|{m}|{parts[2]}"]
            return out
        return list(defs[key]["args"]) if key in defs else []

    def cost(key: str) -> int:
        if key.startswith("A"):
            return len(deps(key))
        return equation_cost(defs[key]) if key in defs else 1

    if mode == "forward":
        start = query
    else:
        if query in defs or not query.startswith("I"):
            raise SolverError("reverse mode asks for an instance parameter that no equation defines")
        relevant = [g for g in givens if query in nx.ancestors(_graph(g["target"], deps), g["target"])]
        if len(relevant) != 1:
            raise SolverError(f"reverse mode needs exactly one stated value depending on {query}, got {len(relevant)}")
        start = relevant[0]["target"]
    graph = _graph(start, deps)
    values: dict[str, _Linear] = {}
    for key in nx.topological_sort(graph):
        if key.startswith("A"):
            parts = split_key(key)
            ds = deps(key)
            if parts[0] == "A01":
                values[key] = sum((values[d] for d in ds), _Linear(0, 0))
            else:
                values[key] = sum((values[ds[i]] * values[ds[i + 1]] for i in range(0, len(ds), 2)), _Linear(0, 0))
        elif key in defs:
            values[key] = _apply(defs[key], [values[d] for d in defs[key]["args"]]) + _Linear(0, 0)
        elif mode == "reverse" and key == query:
            values[key] = _Linear(1, 0)
        else:
            raise SolverError(f"{key} is used but never defined")
    op = sum(cost(key) for key in graph.nodes)
    result = values[start]
    if mode == "forward":
        return _integer(result.b), op
    if result.a == 0:
        raise SolverError("the stated value does not depend on the hidden quantity")
    return _integer((Fraction(relevant[0]["const"]) - result.b) / result.a), op


def _integer(value: Fraction) -> int:
    if value.denominator != 1:
        raise SolverError(f"the answer {value} is not an integer")
    return int(value)


def _graph(start: str, deps) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_node(start)
    stack, seen = [start], {start}
    while stack:
        key = stack.pop()
        for d in deps(key):
            graph.add_edge(d, key)
            if d not in seen:
                seen.add(d)
                stack.append(d)
    if not nx.is_directed_acyclic_graph(graph):
        raise SolverError("the equations are cyclic")
    return graph


def _check_equations(equations: object) -> list[dict]:
    """A non-empty list of equation dicts with a str ``target``, a str ``op`` and a list ``args``."""
    equations = check_sequence(equations, "equations", min_len=1)
    for i, eq in enumerate(equations):
        if not (isinstance(eq, dict) and isinstance(eq.get("target"), str) and isinstance(eq.get("op"), str)
                and isinstance(eq.get("args"), list)):
            raise TypeError(f"equations[{i}] must be a dict with str 'target', str 'op' and list 'args', got {eq!r}")
    return equations


def solve(problem: Problem) -> tuple[object, int]:
    """Re-solve a ``Problem`` from its equations: ``(answer, op)`` in the same form as ``problem.answer``."""
    check_instance(problem, "problem", Problem, "a Problem")
    if problem.subset == "symbolic":
        return solve_symbolic(problem.equations, int(problem.query))
    return solve_realistic(problem.equations, problem.query, problem.mode)


def check(problem: Problem) -> None:
    """Raise ``SolverError`` unless the independent solver reproduces the problem's answer and op."""
    check_instance(problem, "problem", Problem, "a Problem")
    answer, op = solve(problem)
    if answer != problem.answer or op != problem.op:
        raise SolverError(f"{problem.id}: solver gives answer {answer!r} op {op}, "
                          f"generator {problem.answer!r} op {problem.op}")
