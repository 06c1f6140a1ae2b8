"""Rep-CodeGen's loop: generate candidate code with LLM agents, evaluate it in the sandbox against the
constraint checkers, select the best and evolve them (mutate one parent or combine two) with their
evaluation reports as feedback; repeat for a number of generations (paper Sec. 3, Fig. 2).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.materials.rep_codegen.blocks import BASE_CODES, REFERENCE_GENES, compose
from icml25.materials.rep_codegen.constraints import Constraint, default_constraints
from icml25.materials.rep_codegen.crystal import Crystal
from icml25.materials.rep_codegen.data import structure_bank
from icml25.materials.rep_codegen.llm import LLMClient, extract_code, random_genes
from icml25.materials.rep_codegen.sandbox import EvalReport, run_candidate
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_choice, check_instance, check_scalar, check_sequence

TASK = """You write Python code that turns a periodic crystal into a graph for a graph neural network.
Define `represent(lattice, frac_coords, numbers)`: `lattice` is a (3, 3) array whose rows are the cell vectors
in Angstrom, `frac_coords` an (N, 3) array of fractional coordinates, `numbers` the N atomic numbers. Return
`Graph(node_feats, edge_index, edge_feats, edge_pseudo)` (already defined): node_feats (N, Fn), edge_index
(2, E) integer source/target node indices, edge_feats (E, Fe) invariant edge features, edge_pseudo (E, Fp)
pseudo-scalar edge features that change sign under a reflection (may have 0 columns). Only numpy, math,
itertools, functools, collections, heapq, operator and scipy may be imported; no files, no network.
The representation must satisfy these constraints:
"""
ROLES = {
    "generator": "You are a materials-informatics engineer who writes correct, vectorised numpy code.",
    "evolver": "You improve crystal-graph code using the evaluation report of each parent; keep what passes.",
    "evaluator": "You summarise evaluation reports of crystal-graph code into short, concrete advice.",
}


@dataclass
class Candidate:
    """One evaluated code: its report, where it came from (``base``, ``mutate``, ``crossover``) and when."""

    report: EvalReport
    origin: str
    generation: int

    @property
    def source(self) -> str:
        return self.report.source

    def rank_key(self) -> tuple[int, int]:
        """Sort key: most constraints passed, then the newest (on a tie the offspring displaces its parent, the
        neutral drift of (1 + lambda) evolution strategies, so the search can cross plateaus)."""
        return -self.report.n_passed, -self.generation


@dataclass
class History:
    """A run's record: every candidate, the kept population and best per generation, agent failures."""

    candidates: list[Candidate] = field(default_factory=list)
    best_per_generation: list[int] = field(default_factory=list)
    populations: list[list[int]] = field(default_factory=list)
    agent_failures: int = 0

    @property
    def best(self) -> Candidate:
        return min(reversed(self.candidates), key=Candidate.rank_key)

    @property
    def n_evaluated(self) -> int:
        return len(self.candidates)


def _fingerprint(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class RepCodeGen:
    """The three-stage evolutionary loop of Rep-CodeGen.

    Parameters
    ----------
    clients : the coder agents (:class:`OpenAICompatibleClient`, :class:`ScriptedClient`, ...), used in turn.
    constraints : the checkers (default: C1-C6, :func:`default_constraints`).
    bank : structures the checkers transform (default: :func:`structure_bank`).
    population : candidates written per generation (M).
    keep : parents kept after each selection (P): the best by constraints passed, ties to the newest.
    generations : number of generate/evaluate/evolve rounds (G).
    seed : the choice of operations and parents.
    base_codes : sources of the starting codes (default: the CGCNN, k-NN and Matformer-style references).
    timeout : sandbox wall-clock (and CPU) seconds per candidate.
    check_seed : seed of the checkers' random transformations (fixed, so evaluations can be cached).
    cache : an optional shared ``{sha256(source): EvalReport}`` so that repeated code is evaluated once.
    evaluator : an optional agent that turns each report into advice for the evolver (else the report itself).
    temperature : the sampling temperature asked of the agents.
    """

    def __init__(self, clients: Sequence[LLMClient], constraints: Sequence[Constraint] | None = None,
                 bank: Sequence[Crystal] | None = None, population: int = 8, keep: int = 3, generations: int = 5,
                 seed: Seed = 0, base_codes: Sequence[str] | None = None, timeout: float = 20.0,
                 check_seed: int = 0, cache: MutableMapping[str, EvalReport] | None = None,
                 evaluator: LLMClient | None = None, temperature: float = 0.7) -> None:
        self.clients = check_sequence(clients, "clients", min_len=1)
        for i, c in enumerate(self.clients):
            if not callable(getattr(c, "complete", None)):
                raise TypeError(f"clients[{i}] must have a complete(messages, temperature) method, got {c!r}")
        if evaluator is not None and not callable(getattr(evaluator, "complete", None)):
            raise TypeError(f"evaluator must have a complete(messages, temperature) method, got {evaluator!r}")
        self.constraints = list(constraints) if constraints is not None else default_constraints()
        check_sequence(self.constraints, "constraints", min_len=1)
        self.bank = structure_bank(0) if bank is None else check_sequence(
            bank, "bank", min_len=1, item=lambda c, n: check_instance(c, n, Crystal))
        self.population = check_scalar(population, "population", "int", min=1)
        self.keep = check_scalar(keep, "keep", "int", min=1)
        self.generations = check_scalar(generations, "generations", "int", min=0)
        self.rng = as_generator(seed)
        bases = [compose(REFERENCE_GENES[b]) for b in BASE_CODES] if base_codes is None else base_codes
        self.base_codes = check_sequence(bases, "base_codes", min_len=1, item=lambda s, n: check_instance(s, n, str))
        self.timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
        self.check_seed = check_scalar(check_seed, "check_seed", "int", min=0)
        self.cache = {} if cache is None else check_instance(cache, "cache", MutableMapping)
        self.evaluator = evaluator
        self.temperature = check_scalar(temperature, "temperature", "real", min=0.0, max=2.0)

    def evaluate(self, source: str) -> EvalReport:
        """The sandboxed evaluation of ``source`` (from the cache when this code was seen before)."""
        check_instance(source, "source", str)
        key = _fingerprint(source)
        if key not in self.cache:
            self.cache[key] = run_candidate(source, self.bank, self.constraints, self.timeout, self.check_seed)
        return self.cache[key]

    def _constraint_text(self) -> str:
        return "\n".join(f"- {c.name}: {c.description}" for c in self.constraints)

    def _feedback(self, cand: Candidate) -> str:
        report = cand.report.feedback()
        if self.evaluator is None:
            return report
        messages = [{"role": "system", "content": ROLES["evaluator"]},
                    {"role": "user", "content": f"Evaluation report:\n{report}\n\nSummarise what to fix."}]
        try:
            return report + "\nAdvice: " + self.evaluator.complete(messages, self.temperature)
        except Exception:  # noqa: BLE001 - a failing evaluator agent only loses its advice
            return report

    def messages(self, parents: Sequence[Candidate], stage: str) -> list[dict[str, str]]:
        """The prompt for one new candidate: the task, the constraints, the parents' code and reports."""
        parents = check_sequence(parents, "parents", min_len=1, item=lambda p, n: check_instance(p, n, Candidate))
        stage = check_choice(stage, "stage", ("generate", "evolve"))
        shown = "\n\n".join(f"Code {i + 1} (passes {p.report.n_passed}/{len(self.constraints)}):\n```python\n"
                            f"{p.source}```\nEvaluation:\n{self._feedback(p)}" for i, p in enumerate(parents))
        ask = ("Combine the strengths of these codes into one better code." if len(parents) > 1 else
               "Modify this code so that it satisfies more constraints.")
        role = "generator" if stage == "generate" else "evolver"
        return [{"role": "system", "content": ROLES[role]},
                {"role": "user", "content": f"{TASK}{self._constraint_text()}\n\n{shown}\n\n{ask} Answer with one "
                                            "```python block that defines represent."}]

    def _write(self, client: LLMClient, parents: Sequence[Candidate], stage: str) -> str | None:
        try:
            return extract_code(client.complete(self.messages(parents, stage), self.temperature))
        except Exception:  # noqa: BLE001 - an agent failure (HTTP, timeout, no code) is recorded, never raised
            return None

    def run(self) -> History:
        """Evaluate the base codes, then ``generations`` rounds of write -> sandbox -> select."""
        history = History()
        for source in self.base_codes:
            history.candidates.append(Candidate(self.evaluate(source), "base", 0))
        pop = sorted(range(len(history.candidates)), key=lambda i: (*history.candidates[i].rank_key(), -i))[:self.keep]
        history.populations.append(pop)
        history.best_per_generation.append(history.candidates[pop[0]].report.n_passed)
        for gen in range(1, self.generations + 1):
            for m in range(self.population):
                client = self.clients[m % len(self.clients)]
                if len(pop) > 1 and self.rng.random() < 0.5:
                    picks = self.rng.choice(len(pop), size=2, replace=False)
                    origin = "crossover"
                else:
                    picks = [self.rng.integers(len(pop))]
                    origin = "mutate"
                parents = [history.candidates[pop[int(i)]] for i in picks]
                source = self._write(client, parents, "generate" if gen == 1 else "evolve")
                if source is None:
                    history.agent_failures += 1
                    report = EvalReport(source="", error="the agent returned no usable code",
                                        passed={c.name: False for c in self.constraints},
                                        violations={c.name: math.inf for c in self.constraints},
                                        details={c.name: "not evaluated" for c in self.constraints})
                else:
                    report = self.evaluate(source)
                history.candidates.append(Candidate(report, origin, gen))
            ranked = sorted({*pop, *range(len(history.candidates) - self.population, len(history.candidates))},
                            key=lambda i: (*history.candidates[i].rank_key(), -i))
            pop = ranked[:self.keep]
            history.populations.append(pop)
            history.best_per_generation.append(history.candidates[pop[0]].report.n_passed)
        return history


def random_search(n_candidates: int, constraints: Sequence[Constraint] | None = None,
                  bank: Sequence[Crystal] | None = None, seed: Seed = 0, timeout: float = 20.0, check_seed: int = 0,
                  cache: MutableMapping[str, EvalReport] | None = None) -> History:
    """The ablation without selection: ``n_candidates`` codes with uniformly random genes, each evaluated in the
    sandbox like the loop's candidates; ``best_per_generation`` is the best so far after each candidate."""
    n_candidates = check_scalar(n_candidates, "n_candidates", "int", min=1)
    rng = as_generator(seed)
    loop = RepCodeGen([_NoAgent()], constraints, bank, generations=0, timeout=timeout, check_seed=check_seed,
                      cache=cache)
    history, best = History(), 0
    for _ in range(n_candidates):
        cand = Candidate(loop.evaluate(compose(random_genes(rng))), "random", 0)
        history.candidates.append(cand)
        best = max(best, cand.report.n_passed)
        history.best_per_generation.append(best)
    return history


class _NoAgent:
    def complete(self, messages: Any, temperature: float = 0.7) -> str:
        raise RuntimeError("random search writes no code with an agent")


def success_rate(histories: Sequence[History], n_constraints: int) -> float:
    """The fraction of runs whose best candidate passes all ``n_constraints`` checks."""
    histories = check_sequence(histories, "histories", min_len=1, item=lambda h, n: check_instance(h, n, History))
    n_constraints = check_scalar(n_constraints, "n_constraints", "int", min=1)
    return float(np.mean([h.best.report.n_passed == n_constraints for h in histories]))
