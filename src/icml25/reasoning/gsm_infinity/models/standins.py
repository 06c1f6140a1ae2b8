"""Stand-in models for offline checks: oracle, BM25 retrieval + exact solver, random guess, sigmoid.

They find their problem by the prompt text (a lookup built from the problem list), so they play
the part of a model behind the same ``generate`` interface as a real LLM.
"""

from __future__ import annotations

import math
import random
import re

import numpy as np
from scipy import sparse

from icml25.reasoning.gsm_infinity.models.base import check_generation, prompt_of
from icml25.reasoning.gsm_infinity.problem import Problem
from icml25.reasoning.gsm_infinity.solver import SolverError, solve_realistic, solve_symbolic
from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_bool, check_instance, check_scalar, check_sequence

_WORD = re.compile(r"\w+")
UNKNOWN = "I cannot determine the answer."


class _LookupModel:
    def __init__(self, problems: list[Problem]) -> None:
        problems = check_sequence(problems, "problems", min_len=1,
                                  item=lambda p, name: check_instance(p, name, Problem, "a Problem"))
        self.problems = {p.prompt: p for p in problems}

    def _problem(self, messages: list[dict]) -> Problem | None:
        return self.problems.get(prompt_of(messages))

    def generate(self, messages: list[dict], *, max_tokens: int = 4096, temperature: float = 0.0,
                 n: int = 1) -> list[str]:
        check_generation(messages, max_tokens, temperature, n)
        problem = self._problem(messages)
        return [UNKNOWN if problem is None else self.answer(problem, i) for i in range(n)]

    def answer(self, problem: Problem, sample: int) -> str:
        raise NotImplementedError


def _check_question(problem: object, sample: object = 0) -> None:
    """``problem`` must be a ``Problem`` and ``sample`` (the sample index) an integer >= 0."""
    check_instance(problem, "problem", Problem, "a Problem")
    check_scalar(sample, "sample", "int", min=0)


class OracleModel(_LookupModel):
    """The upper bound: replies with the reference solution, or (``solver=True``) with the answer the
    independent solver computes from the full context's equations."""

    def __init__(self, problems: list[Problem], solver: bool = False) -> None:
        super().__init__(problems)
        self.solver = check_bool(solver, "solver")

    def answer(self, problem: Problem, sample: int) -> str:
        """The reply to ``problem`` (the same for every ``sample`` index)."""
        _check_question(problem, sample)
        if not self.solver:
            return problem.solution
        return _solve_answer(problem, list(range(len(problem.equations))))


def _tokens(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


class BM25:
    """Okapi BM25 over tokenised documents (``k1``, ``b`` as in Robertson & Zaragoza, 2009)."""

    def __init__(self, documents: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        documents = check_sequence(documents, "documents", min_len=1,
                                   item=lambda d, name: check_instance(d, name, str, "a string"))
        self.k1 = check_scalar(k1, "k1", "real", min=0.0)
        self.b = check_scalar(b, "b", "real", min=0.0, max=1.0)
        docs = [_tokens(d) for d in documents]
        self.vocab: dict[str, int] = {}
        rows, cols, counts = [], [], []
        for i, doc in enumerate(docs):
            tf: dict[int, int] = {}
            for word in doc:
                j = self.vocab.setdefault(word, len(self.vocab))
                tf[j] = tf.get(j, 0) + 1
            rows += [i] * len(tf)
            cols += list(tf)
            counts += list(tf.values())
        self.tf = sparse.csc_matrix((counts, (rows, cols)), shape=(len(docs), len(self.vocab)), dtype=float)
        self.lengths = np.array([len(d) for d in docs], dtype=float)
        df = np.diff(self.tf.indptr)
        self.idf = np.log(1.0 + (len(docs) - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query``."""
        check_instance(query, "query", str, "a string")
        ids = [self.vocab[w] for w in _tokens(query) if w in self.vocab]
        if not ids:
            return np.zeros(len(self.lengths))
        tf = self.tf[:, ids].toarray()
        norm = self.k1 * (1 - self.b + self.b * self.lengths / max(self.lengths.mean(), 1e-9))
        return (self.idf[ids] * tf * (self.k1 + 1) / (tf + norm[:, None])).sum(axis=1)

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents (ties broken by position)."""
        k = check_scalar(k, "k", "int", min=1)
        scores = self.scores(query)
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


class RAGModel(_LookupModel):
    """Retrieval stand-in: BM25 picks the ``k`` statements nearest the question, the exact solver answers.

    The answer is right only if the retrieved statements carry everything needed; the paper's
    argument is that GSM-∞'s dense, uniformly relevant-looking context defeats this.
    """

    def __init__(self, problems: list[Problem], k: int = 8) -> None:
        super().__init__(problems)
        self.k = check_scalar(k, "k", "int", min=1)

    def retrieve(self, problem: Problem) -> list[int]:
        """Indices of the retrieved statements."""
        _check_question(problem)
        return sorted(BM25(problem.statements).top(problem.question, self.k))

    def answer(self, problem: Problem, sample: int) -> str:
        """The solver's reply from the retrieved statements (the same for every ``sample`` index)."""
        _check_question(problem, sample)
        return _solve_answer(problem, self.retrieve(problem))


def _solve_answer(problem: Problem, indices: list[int]) -> str:
    """The exact solver's reply from the statements ``indices`` only."""
    equations = [problem.equations[i] for i in indices]
    try:
        if problem.subset == "symbolic":
            names, _ = solve_symbolic(equations, int(problem.query))
            return "ANSWER: " + (", ".join(names) if names else "None")
        value, _ = solve_realistic(equations, problem.query, problem.mode)
    except SolverError:
        return UNKNOWN
    return f"Answer: {value}."


def _wrong(problem: Problem, rng: random.Random) -> str:
    if problem.subset == "symbolic":
        names = sorted(set(re.findall(r"V\d{6}", " ".join(problem.statements))))
        guess = sorted(rng.sample(names, min(len(names), rng.randint(1, 3))))
        if guess == sorted(problem.answer):
            guess = [] if guess else names[:1]
        return "ANSWER: " + (", ".join(guess) if guess else "None")
    return f"Answer: {problem.answer + rng.randint(1, 9)}."


class RandomGuessModel(_LookupModel):
    """Chance floor: a random set of 1-3 context variables, or a random number from the context."""

    def __init__(self, problems: list[Problem], seed: Seed = 0) -> None:
        super().__init__(problems)
        self.seed = int_seed(seed)

    def answer(self, problem: Problem, sample: int) -> str:
        """A random guess for sample ``sample`` of ``problem``."""
        _check_question(problem, sample)
        rng = random.Random(f"{self.seed}:{problem.id}:{sample}")
        if problem.subset == "symbolic":
            names = sorted(set(re.findall(r"V\d{6}", " ".join(problem.statements))))
            return "ANSWER: " + ", ".join(sorted(rng.sample(names, min(len(names), rng.randint(1, 3)))))
        numbers = [int(x) for x in re.findall(r"\b\d+\b", " ".join(problem.statements))] or [0]
        return f"Answer: {rng.choice(numbers)}."


class SigmoidModel(_LookupModel):
    """A synthetic "bounded working memory" model: right with probability ``1/(1+exp(k (op - op50)))``.

    With ``per_problem=True`` the success probability also varies per problem (a Beta draw around the
    curve), which makes pass@k differ from the i.i.d. formula; ``success_probability`` exposes it.
    """

    def __init__(self, problems: list[Problem], op50: float = 12.0, k: float = 0.5, seed: Seed = 0,
                 per_problem: bool = False) -> None:
        super().__init__(problems)
        self.op50, self.k = check_scalar(op50, "op50", "real"), check_scalar(k, "k", "real")
        self.seed, self.per_problem = int_seed(seed), check_bool(per_problem, "per_problem")

    def success_probability(self, problem: Problem) -> float:
        """This model's probability of answering ``problem`` correctly."""
        _check_question(problem)
        p = 1.0 / (1.0 + math.exp(self.k * (problem.op - self.op50)))
        if not self.per_problem:
            return p
        rng = random.Random(f"{self.seed}:p:{problem.id}")
        concentration = 4.0
        return rng.betavariate(max(p, 1e-3) * concentration, max(1 - p, 1e-3) * concentration)

    def answer(self, problem: Problem, sample: int) -> str:
        """The reference solution with this model's success probability, else a wrong answer."""
        _check_question(problem, sample)
        rng = random.Random(f"{self.seed}:{problem.id}:{sample}")
        return problem.solution if rng.random() < self.success_probability(problem) else _wrong(problem, rng)
