"""The Symbolic subset: random assignment trees over ``V000000``-``V999999`` (GSM-∞ Sec. 3, Symbolic)."""

from __future__ import annotations

import random
from collections.abc import Callable

from icml25.reasoning.gsm_infinity.length import fit_noise
from icml25.reasoning.gsm_infinity.problem import Problem, resolve_tokenizer
from icml25.reasoning.gsm_infinity.renderer import render_symbolic_statement, symbolic_prompt
from icml25.reasoning.gsm_infinity.solver import check
from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_scalar

NAME_POOL = 10**6
EDGE_OPS = ("copy", "add", "sub")


def _tree(names: list[str], rng: random.Random, root_value: int | None) -> list[dict]:
    """Random recursive tree: node i >= 1 hangs off a uniform earlier node with copy/+1/-1."""
    eqs = [] if root_value is None else [{"target": names[0], "op": "const", "args": [], "const": root_value}]
    for i in range(1, len(names)):
        parent = names[rng.randrange(i)]
        op = rng.choice(EDGE_OPS)
        eqs.append({"target": names[i], "op": op, "args": [parent], "const": None if op == "copy" else 1})
    return eqs


def _values(eqs: list[dict]) -> dict[str, int]:
    values: dict[str, int] = {}
    for eq in eqs:  # in tree order: parents before children
        if eq["op"] == "const":
            values[eq["target"]] = eq["const"]
        elif eq["args"][0] in values:
            delta = {"copy": 0, "add": 1, "sub": -1}[eq["op"]]
            values[eq["target"]] = values[eq["args"][0]] + delta
    return values


def _solution(core: list[dict], values: dict[str, int], answer: list[str]) -> str:
    children: dict[str, list[dict]] = {}
    for eq in core[1:]:
        children.setdefault(eq["args"][0], []).append(eq)
    lines, stack = [], [core[0]]
    while stack:
        eq = stack.pop()
        lines.append(f"{render_symbolic_statement(eq)[len('assign '):-1]} => {eq['target']} = {values[eq['target']]}.")
        stack.extend(reversed(children.get(eq["target"], [])))
    return " ".join(lines) + "\nANSWER: " + ", ".join(answer)


class _NoiseStream:
    """Noise statements drawn one by one (name, parent, edge op), so ``n`` statements are a prefix of ``n+1``."""

    def __init__(self, seed: int, taken: set[str]) -> None:
        self.rng = random.Random(f"gsm-infinity-symbolic-noise:{seed}")
        self.taken = set(taken)
        self.names: list[str] = []
        self.eqs: list[dict] = []
        self.statements: list[str] = []

    def _name(self) -> str:
        while True:
            name = f"V{self.rng.randrange(NAME_POOL):06d}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def take(self, n: int) -> tuple[list[dict], list[str]]:
        if n and not self.names:
            self.names.append(self._name())  # the noise root: never assigned, so nothing below is derivable
        while len(self.eqs) < n:
            parent = self.names[self.rng.randrange(len(self.names))]
            name = self._name()
            self.names.append(name)
            op = self.rng.choice(EDGE_OPS)
            eq = {"target": name, "op": op, "args": [parent], "const": None if op == "copy" else 1}
            self.eqs.append(eq)
            self.statements.append(render_symbolic_statement(eq))
        return self.eqs[:n], self.statements[:n]


def generate_symbolic(op: int, *, n_noise: int | None = None, target_tokens: int | None = None,
                      tokenizer: Callable[[str], int] | None = None, seed: Seed = 0) -> Problem:
    """One Symbolic problem with exactly ``op`` core assignments (Sec. 3.1 of the paper).

    The core is a random tree over ``op`` variables: the root is assigned ``U{0..10}``, every other
    node copies, adds 1 to or subtracts 1 from its parent.  Noise is a second tree of ``n_noise``
    statements with no root assignment, so none of its variables is derivable and the answer cannot
    change.  Give ``n_noise`` or ``target_tokens`` (then ``n_noise`` is fitted with ``tokenizer``,
    default: the regex counter).  The question asks which derivable variables equal a value drawn
    from the core values; the answer is that set.  Core and noise use separate seeded streams, so
    the same ``seed`` gives the same core and answer at every length.  ``seed`` is an int >= 0 (recorded in the
    problem), or a NumPy Generator / ``None`` from which one is drawn.
    """
    op = check_scalar(op, "op", "int", min=1)
    seed = int_seed(seed)
    if n_noise is not None and target_tokens is not None:
        raise ValueError("give n_noise or target_tokens, not both")
    if n_noise is not None:
        n_noise = check_scalar(n_noise, "n_noise", "int", min=0)
    if target_tokens is not None:
        target_tokens = check_scalar(target_tokens, "target_tokens", "int", min=1)
    if op + (n_noise or 0) + 1 > NAME_POOL // 2:
        raise ValueError(f"op + n_noise + 1 must be <= {NAME_POOL // 2} (half the V000000-V999999 name pool), "
                         f"got {op + (n_noise or 0) + 1}")
    count = resolve_tokenizer(tokenizer)
    rng = random.Random(seed)
    core_names = [f"V{n:06d}" for n in rng.sample(range(NAME_POOL), op)]
    core = _tree(core_names, rng, rng.randint(0, 10))
    values = _values(core)
    value = rng.choice([values[name] for name in core_names])
    answer = sorted(name for name in core_names if values[name] == value)
    solution = _solution(core, values, answer)

    core_statements = [render_symbolic_statement(eq) for eq in core]
    noise = _NoiseStream(seed, set(core_names))

    def build(n: int) -> tuple[list[dict], list[str], str, str]:
        noise_eqs, noise_statements = noise.take(n)
        order = list(range(op + n))
        random.Random(f"gsm-infinity-symbolic-shuffle:{seed}:{n}").shuffle(order)
        eqs = [core[i] if i < op else noise_eqs[i - op] for i in order]
        statements = [core_statements[i] if i < op else noise_statements[i - op] for i in order]
        prompt, question = symbolic_prompt(statements, value)
        return eqs, statements, prompt, question

    if target_tokens is not None:
        n_noise, _ = fit_noise(lambda n: count(build(n)[2]), target_tokens, max_noise=NAME_POOL // 2 - op - 1)
    n_noise = n_noise or 0
    eqs, statements, prompt, question = build(n_noise)
    core_set = set(core_names)
    problem = Problem(
        id=f"symbolic-forward-op{op}-n{n_noise}-s{seed}", subset="symbolic", mode="forward", template="symbolic",
        op=op, seed=seed, n_noise=n_noise, target_tokens=target_tokens, length_tokens=count(prompt),
        statements=statements, equations=eqs, necessary=[i for i, eq in enumerate(eqs) if eq["target"] in core_set],
        query=str(value), question=question, messages=[{"role": "user", "content": prompt}],
        answer=answer, solution=solution,
    )
    check(problem)
    return problem
