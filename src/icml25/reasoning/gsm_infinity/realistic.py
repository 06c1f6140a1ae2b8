"""The Medium and Hard subsets: iGSM-style hierarchies with implicit aggregates (GSM-∞ Sec. 3.2).

A *structure* of entity layers (places -> member kinds [-> items per member, Hard]) defines the
*instance* parameters (one per structure edge, stated in the text) and the *abstract* parameters
(totals implied by the hierarchy, never stated: computing one is an implicit operation).  The
*necessary* dependency graph is grown in topological order until its op count, the sum of the
in-degrees (a constant counts as one dependency, an aggregate counts its summands), equals the
requested ``op`` exactly; the question asks for its last parameter (forward) or for a hidden
constant given the value of that last parameter (reverse).  Noise parameters hang off the core
("spider" topology): they are defined from core parameters, never the other way round, and use
fresh places (and fresh member kinds for per-member items), so they cannot change any total the
answer needs.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from icml25.reasoning.gsm_infinity.length import fit_noise
from icml25.reasoning.gsm_infinity.problem import Problem, resolve_tokenizer
from icml25.reasoning.gsm_infinity.renderer import phrase, realistic_prompt, render_realistic_statement
from icml25.reasoning.gsm_infinity.solver import SolverError, check, solve_realistic
from icml25.reasoning.gsm_infinity.words import TEMPLATES
from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar

DIFFICULTIES = ("medium", "hard")
MIN_OP = 2
HARD_PRODUCT_OP = 4  # from this op on, a Hard core must contain a product aggregate (A02)
# (op, number of parameter dependencies, uses a constant, cost); weights favour sums as in iGSM.
SHAPES = (("const", 0, True, 1), ("copy", 1, False, 1), ("add", 1, True, 2), ("mul", 1, True, 2),
          ("add", 2, False, 2), ("sub", 2, False, 2), ("add", 2, True, 3), ("add", 3, False, 3))
SHAPE_WEIGHTS = (3, 1, 3, 2, 3, 2, 2, 2)


class GenerationError(RuntimeError):
    """Rejection sampling ran out of attempts; the message carries the acceptance statistics."""


def _shape_value(shape: tuple, args: list[str], const: int | None, vals: dict[str, int]) -> int:
    op = shape[0]
    xs = [vals[a] for a in args]
    if op == "const":
        return const
    if op == "copy":
        return xs[0]
    if op == "mul":
        return xs[0] * const
    if op == "sub":
        return xs[0] - xs[1]
    return sum(xs) + (const or 0)


class _Builder:
    """One attempt at a core graph (all state of the attempt, so failures leave nothing behind)."""

    def __init__(self, rng: random.Random, hard: bool, words: dict, number_range: int, max_value: int) -> None:
        self.rng, self.hard, self.number_range, self.max_value = rng, hard, number_range, max_value
        w0, w1 = rng.randint(1, 4), rng.randint(2, 5)
        self.places = rng.sample(words["places"], w0)
        self.members = rng.sample(words["members"], w1)
        self.edges01 = self._bipartite(self.places, self.members)
        self.items = rng.sample(words["items"], rng.randint(1, 4)) if hard else []
        self.edges12 = self._bipartite(self.members, self.items) if hard else []
        self.instance = [f"I01|{a}|{b}" for a, b in self.edges01] + [f"I12|{b}|{c}" for b, c in self.edges12]
        rng.shuffle(self.instance)
        self.abstract: dict[str, list[str]] = {}
        for a in self.places:
            self.abstract[f"A01|{a}"] = [f"I01|{x}|{b}" for x, b in self.edges01 if x == a]
            for c in self.items:
                deps = []
                for x, b in self.edges01:
                    if x == a and (b, c) in self.edges12:
                        deps += [f"I01|{a}|{b}", f"I12|{b}|{c}"]
                if deps:
                    self.abstract[f"A02|{a}|{c}"] = deps
        self.order: list[str] = []
        self.eqs: dict[str, dict] = {}
        self.vals: dict[str, int] = {}
        self.unused: list[str] = []
        self.ops = 0

    def _bipartite(self, upper: list[str], lower: list[str]) -> list[tuple[str, str]]:
        edges = {(self.rng.choice(upper), b) for b in lower}
        for a in upper:
            if not any(x == a for x, _ in edges):
                edges.add((a, self.rng.choice(lower)))
        extra = self.rng.random() * 0.4
        for a in upper:
            for b in lower:
                if self.rng.random() < extra:
                    edges.add((a, b))
        return sorted(edges)

    def _push(self, key: str, value: int, consumed: list[str]) -> None:
        self.order.append(key)
        self.vals[key] = value
        self.unused = [u for u in self.unused if u not in consumed] + [key]

    def add_abstract(self, key: str) -> None:
        deps = self.abstract[key]
        if key.startswith("A01"):
            value = sum(self.vals[d] for d in deps)
        else:
            value = sum(self.vals[deps[i]] * self.vals[deps[i + 1]] for i in range(0, len(deps), 2))
        self.ops += len(deps)
        self._push(key, value, deps)

    def add_instance(self, key: str, budget: tuple[int, int], must: list[str] | None = None) -> bool:
        """Define ``key`` with a random shape of cost in ``budget``, consuming ``must`` (all) or unused params."""
        shapes = [s for s, w in zip(SHAPES, SHAPE_WEIGHTS, strict=True) for _ in range(w)
                  if budget[0] <= s[3] <= budget[1] and s[1] <= len(self.order)
                  and (must is None or s[1] >= len(must))]
        if not shapes:
            return False
        shape = self.rng.choice(shapes)
        op, n_args, has_const, cost = shape
        pool = list(must) if must is not None else self.rng.sample(self.unused, min(len(self.unused), n_args))
        rest = [k for k in self.order if k not in pool]
        args = (pool + self.rng.sample(rest, n_args - len(pool)))[:n_args] if n_args >= len(pool) else pool[:n_args]
        if len(args) < n_args:
            return False
        const = self.rng.randint(1, self.number_range - 1) if has_const else None
        if op == "sub":
            args.sort(key=lambda k: -self.vals[k])
        value = _shape_value(shape, args, const, self.vals)
        if value < 0 or value > self.max_value:
            return False
        self.eqs[key] = {"target": key, "op": op, "args": args, "const": const, "cost": cost}
        self.ops += cost
        self._push(key, value, args)
        return True

    def free_instance(self) -> str | None:
        return next((k for k in self.instance if k not in self.eqs), None)


def _build_core(op: int, hard: bool, rng: random.Random, words: dict, number_range: int,
                max_value: int) -> _Builder | None:
    b = _Builder(rng, hard, words, number_range, max_value)
    kinds = "A02" if hard and op >= HARD_PRODUCT_OP else ("A0" if hard else "A01")
    candidates = sorted(k for k in b.abstract if k.startswith(kinds) and b.abstract[k])
    if not candidates:
        return None
    required = rng.choice(candidates)
    children = list(dict.fromkeys(b.abstract[required]))
    if len(b.abstract[required]) + len(children) > op:
        return None
    for child in children:
        room = op - b.ops - len(b.abstract[required]) - (len(children) - children.index(child) - 1)
        if not b.add_instance(child, (1, min(3, room))):
            return None
    b.add_abstract(required)
    for _ in range(4 * op + 10):
        r, u = op - b.ops, len(b.unused)
        if r == 0:
            return b if u == 1 else None
        free = b.free_instance()
        if u <= r <= 3 and free is not None and rng.random() < 0.7:
            return b if b.add_instance(free, (r, r), must=list(b.unused)) and len(b.unused) == 1 else None
        ready = [k for k, deps in sorted(b.abstract.items())
                 if k not in b.vals and deps and all(d in b.vals for d in deps) and len(deps) <= r - max(0, u - 2)]
        if ready and rng.random() < 0.3:
            b.add_abstract(rng.choice(ready))
        elif free is not None:
            b.add_instance(free, (1, min(3, r - max(0, u - 1))))
        else:
            return None
    return None


def _linear(b: _Builder, hidden: str) -> dict[str, tuple[int, int]]:
    """Each core parameter as ``(a, c)`` meaning ``a * x + c`` with ``x`` the hidden quantity."""
    forms: dict[str, tuple[int, int]] = {}
    for key in b.order:
        if key == hidden:
            forms[key] = (1, 0)
        elif key.startswith("A01"):
            forms[key] = tuple(map(sum, zip(*(forms[d] for d in b.abstract[key]), strict=True)))
        elif key.startswith("A02"):
            deps = b.abstract[key]
            parts = []
            for i in range(0, len(deps), 2):
                (a1, c1), (a2, c2) = forms[deps[i]], forms[deps[i + 1]]
                parts.append((a1 * c2 + a2 * c1, c1 * c2))
            forms[key] = tuple(map(sum, zip(*parts, strict=True)))
        else:
            eq = b.eqs[key]
            xs = [forms[a] for a in eq["args"]]
            if eq["op"] == "const":
                forms[key] = (0, eq["const"])
            elif eq["op"] == "mul":
                forms[key] = (xs[0][0] * eq["const"], xs[0][1] * eq["const"])
            elif eq["op"] == "sub":
                forms[key] = (xs[0][0] - xs[1][0], xs[0][1] - xs[1][1])
            else:
                forms[key] = (sum(x[0] for x in xs), sum(x[1] for x in xs) + (eq["const"] or 0))
    return forms


def _expression(b: _Builder, key: str) -> str:
    if key.startswith("A01"):
        return " + ".join(str(b.vals[d]) for d in b.abstract[key])
    if key.startswith("A02"):
        deps = b.abstract[key]
        return " + ".join(f"{b.vals[deps[i]]} * {b.vals[deps[i + 1]]}" for i in range(0, len(deps), 2))
    eq = b.eqs[key]
    xs = [str(b.vals[a]) for a in eq["args"]]
    if eq["op"] == "const":
        return str(eq["const"])
    if eq["op"] == "mul":
        return f"{eq['const']} * {xs[0]}"
    if eq["op"] == "sub":
        return f"{xs[0]} - {xs[1]}"
    return " + ".join(xs + ([str(eq["const"])] if eq["const"] else []))


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _affine(a: int, c: int) -> str:
    if not a:
        return str(c)
    head = "x" if a == 1 else f"{a}x"
    return head if c == 0 else f"{head} {'+' if c > 0 else '-'} {abs(c)}"


def _solution(b: _Builder, template: str, hidden: str | None) -> str:
    lines = []
    if hidden is None:
        for key in b.order:
            expression = _expression(b, key)
            tail = "" if expression == str(b.vals[key]) else f" = {b.vals[key]}"
            lines.append(_sentence(f"{phrase(key, template)} = {expression}{tail}."))
        return " ".join(lines) + f"\nAnswer: {b.vals[b.order[-1]]}."
    forms = _linear(b, hidden)
    lines.append(f"Let x be {phrase(hidden, template)}.")
    for key in b.order:
        if key != hidden:
            lines.append(_sentence(f"{phrase(key, template)} = {_affine(*forms[key])}."))
    last = b.vals[b.order[-1]]
    lines.append(f"We are told it equals {last}, so {_affine(*forms[b.order[-1]])} = {last} and x = {b.vals[hidden]}.")
    return " ".join(lines) + f"\nAnswer: {b.vals[hidden]}."


class _NoiseStream:
    """Spider noise drawn one parameter at a time, so ``n`` noise statements are a prefix of ``n + 1``."""

    def __init__(self, b: _Builder, words: dict, hard: bool, seed: int, number_range: int, max_value: int) -> None:
        self.rng = random.Random(f"gsm-infinity-realistic-noise:{seed}")
        places = [p for p in words["places"] if p not in b.places]
        fresh_members = [m for m in words["members"] if m not in b.members]
        self.pairs = [f"I01|{a}|{m}" for a in places for m in words["members"]]
        if hard:
            self.pairs += [f"I12|{m}|{c}" for m in fresh_members for c in words["items"]]
        self.core = [k for k in b.order if not k.startswith("A")] + [k for k in b.order if k.startswith("A")]
        self.vals = dict(b.vals)
        self.number_range, self.max_value = number_range, max_value
        self.keys: list[str] = []
        self.taken: set[str] = set()
        self.eqs: list[dict] = []

    def take(self, n: int) -> list[dict]:
        if n > len(self.pairs):
            raise ValueError(f"at most {len(self.pairs)} noise statements fit this template's word lists, asked {n}")
        rng = self.rng
        while len(self.eqs) < n:
            key = self.pairs[rng.randrange(len(self.pairs))]
            while key in self.taken:
                key = self.pairs[rng.randrange(len(self.pairs))]
            self.taken.add(key)
            shape = rng.choices(SHAPES, SHAPE_WEIGHTS)[0]
            op, n_args, has_const, _ = shape
            pool = self.core + self.keys
            args = list(dict.fromkeys(
                self.core[rng.randrange(len(self.core))] if rng.random() < 0.7 else pool[rng.randrange(len(pool))]
                for _ in range(n_args)))
            const = rng.randint(1, self.number_range - 1) if has_const else None
            if len(args) < n_args:
                shape, op, args, const = SHAPES[0], "const", [], const or 1
            if op == "sub":
                args.sort(key=lambda k: -self.vals[k])
            value = _shape_value(shape, args, const, self.vals)
            if value > self.max_value:
                op, args, const, value = "const", [], 1, 1
            self.vals[key] = value
            self.keys.append(key)
            self.eqs.append({"target": key, "op": op, "args": args, "const": const})
        return self.eqs[:n]


def generate_realistic(op: int, *, difficulty: str = "medium", mode: str = "forward", template: str = "zoo",
                       n_noise: int | None = None, target_tokens: int | None = None,
                       tokenizer: Callable[[str], int] | None = None, seed: Seed = 0, max_attempts: int = 10_000,
                       number_range: int = 5, max_value: int = 10**6, few_shot: bool = True,
                       stats: dict | None = None) -> Problem:
    """One Medium (two layers, implicit sums) or Hard (three layers, implicit products) problem.

    ``op`` is met exactly (rejection sampling over at most ``max_attempts`` core graphs; a
    ``GenerationError`` reports the acceptance rate otherwise).  Constants are ``U{1..number_range-1}``;
    values stay in ``[0, max_value]``.  Reverse mode hides one constant-defined instance parameter,
    states the value of the last parameter instead and asks for the hidden one (unique and integral:
    the hidden quantity enters linearly with a non-zero coefficient).  Pass a dict as ``stats`` to get
    ``attempts`` (core graphs drawn) back, i.e. the acceptance rate ``1 / attempts``.  Noise (``n_noise``
    statements or a ``target_tokens`` length) is added to the fixed core, so the answer is the same at every length.
    ``seed`` is an int >= 0 (recorded in the problem), or a NumPy Generator / ``None`` from which one is drawn.
    """
    op = check_scalar(op, "op", "int", min=MIN_OP)
    seed = int_seed(seed)
    max_attempts = check_scalar(max_attempts, "max_attempts", "int", min=1)
    number_range = check_scalar(number_range, "number_range", "int", min=2)
    max_value = check_scalar(max_value, "max_value", "int", min=1)
    check_choice(difficulty, "difficulty", DIFFICULTIES)
    check_choice(mode, "mode", ("forward", "reverse"))
    check_choice(template, "template", tuple(TEMPLATES))
    check_bool(few_shot, "few_shot")
    if stats is not None:
        check_instance(stats, "stats", dict)
    if n_noise is not None and target_tokens is not None:
        raise ValueError("give n_noise or target_tokens, not both")
    if n_noise is not None:
        n_noise = check_scalar(n_noise, "n_noise", "int", min=0)
    if target_tokens is not None:
        target_tokens = check_scalar(target_tokens, "target_tokens", "int", min=1)
    count = resolve_tokenizer(tokenizer)
    words, hard = TEMPLATES[template], difficulty == "hard"
    rng = random.Random(seed)
    attempts = 0
    while attempts < max_attempts:
        attempts += 1
        b = _build_core(op, hard, rng, words, number_range, max_value)
        if b is None or b.ops != op:
            continue
        hidden = None
        if mode == "reverse":
            constants = [k for k in b.order if k in b.eqs and b.eqs[k]["op"] == "const"]
            hidden = rng.choice(constants)
            a, _ = _linear(b, hidden)[b.order[-1]]
            if a == 0:
                continue
        core = [{k: v for k, v in b.eqs[key].items() if k != "cost"} for key in b.order
                if key in b.eqs and key != hidden]
        query = b.order[-1] if hidden is None else hidden
        if hidden is not None:
            core.append({"target": b.order[-1], "op": "given", "args": [], "const": b.vals[b.order[-1]]})
        try:
            answer, solved_op = solve_realistic(core, query, mode)
        except SolverError:
            continue
        if answer == b.vals[query] and solved_op == op:
            break
    else:
        raise GenerationError(f"no {difficulty} {mode} core graph with op={op} in {max_attempts} attempts "
                              f"(acceptance rate < {1 / max_attempts:.2g}); raise max_attempts or change op")

    noise = _NoiseStream(b, words, hard, seed, number_range, max_value)

    def build(n: int) -> tuple[list[dict], str, str]:
        eqs = core + noise.take(n)
        order = list(range(len(eqs)))
        random.Random(f"gsm-infinity-realistic-shuffle:{seed}:{n}").shuffle(order)
        eqs = [eqs[i] for i in order]
        prompt, question = realistic_prompt([render_realistic_statement(e, template) for e in eqs], query,
                                            template, few_shot)
        return eqs, prompt, question

    if target_tokens is not None:
        n_noise, _ = fit_noise(lambda n: count(build(n)[1]), target_tokens, max_noise=len(noise.pairs))
    n_noise = n_noise or 0
    eqs, prompt, question = build(n_noise)
    core_targets = {(e["target"], e["op"] == "given") for e in core}
    problem = Problem(
        id=f"{difficulty}-{mode}-{template}-op{op}-n{n_noise}-s{seed}", subset=difficulty, mode=mode,
        template=template, op=op, seed=seed, n_noise=n_noise, target_tokens=target_tokens,
        length_tokens=count(prompt), statements=[render_realistic_statement(e, template) for e in eqs],
        equations=eqs, necessary=[i for i, e in enumerate(eqs) if (e["target"], e["op"] == "given") in core_targets],
        query=query, question=question, messages=[{"role": "user", "content": prompt}], answer=b.vals[query],
        solution=_solution(b, template, hidden),
    )
    if stats is not None:
        stats["attempts"] = attempts
    check(problem)
    return problem
