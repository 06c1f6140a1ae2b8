"""The evaluation harness: render -> model -> extract -> score, with JSONL records in and out."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from icml25.reasoning.gsm_infinity.analysis import (
    CurveFit,
    auc,
    first_op_below,
    fit_exponential,
    fit_sigmoid,
    pass_at_k,
)
from icml25.reasoning.gsm_infinity.models.base import as_chat_model
from icml25.reasoning.gsm_infinity.models.http import ModelRequestError
from icml25.reasoning.gsm_infinity.problem import Problem, write_jsonl
from icml25.reasoning.gsm_infinity.scoring import normalize_reply, score
from icml25.utils.validation import check_bool, check_callable, check_scalar, check_sequence


@dataclass
class Results:
    """Evaluation records, one per problem: ``id, subset, mode, template, length, op, n_samples,
    correct`` (one bool per sample), ``replies`` (verbatim) and ``error`` (``None`` or the message)."""

    records: list[dict] = field(default_factory=list)

    def _select(self, **where: object) -> list[dict]:
        return [r for r in self.records if all(r[k] == v for k, v in where.items() if v is not None)]

    def accuracy_by_op(self, **where: object) -> dict[int, float]:
        """Mean accuracy (over problems and samples) per op, for records matching ``where`` (e.g. subset=...)."""
        groups: dict[int, list[float]] = defaultdict(list)
        for r in self._select(**where):
            groups[r["op"]].append(float(np.mean(r["correct"])))
        return {op: float(np.mean(v)) for op, v in sorted(groups.items())}

    def auc(self, **where: object) -> float:
        """Stride-aware Riemann sum of ``accuracy_by_op``."""
        acc = self.accuracy_by_op(**where)
        return auc(list(acc), list(acc.values()))

    def first_op_below(self, level: float, **where: object) -> float | None:
        """The smallest op whose accuracy falls below ``level``."""
        acc = self.accuracy_by_op(**where)
        return first_op_below(list(acc), list(acc.values()), level)

    def fit_sigmoid(self, bounded: bool = False, **where: object) -> CurveFit:
        """Sigmoid fit of ``accuracy_by_op`` (``bounded``: with a fitted floor and ceiling)."""
        check_bool(bounded, "bounded")
        acc = self.accuracy_by_op(**where)
        return fit_sigmoid(list(acc), list(acc.values()), bounded=bounded)

    def fit_exponential(self, **where: object) -> CurveFit:
        """Exponential fit of ``accuracy_by_op``."""
        acc = self.accuracy_by_op(**where)
        return fit_exponential(list(acc), list(acc.values()))

    def pass_at_k(self, ks: Sequence[int], **where: object) -> dict[int, float]:
        """Mean unbiased pass@k over problems, for each ``k`` (needs ``n_samples >= k``)."""
        ks = _check_ks(ks)
        chosen = self._select(**where)
        if not chosen:
            raise ValueError("no records match")
        return {k: float(np.mean([pass_at_k(len(r["correct"]), sum(r["correct"]), k) for r in chosen])) for k in ks}

    def auc_at_k(self, ks: Sequence[int], **where: object) -> dict[int, float]:
        """AUC of per-op pass@k, for each ``k`` (the paper's inference-scaling curve)."""
        ks = _check_ks(ks)
        out = {}
        for k in ks:
            acc: dict[int, list[float]] = defaultdict(list)
            for r in self._select(**where):
                acc[r["op"]].append(pass_at_k(len(r["correct"]), sum(r["correct"]), k))
            ops = sorted(acc)
            out[k] = auc(ops, [float(np.mean(acc[o])) for o in ops])
        return out

    def summary(self) -> list[dict]:
        """Accuracy per ``(subset, mode, template, length, op)``."""
        groups: dict[tuple, list[float]] = defaultdict(list)
        for r in self.records:
            groups[(r["subset"], r["mode"], r["template"], r["length"], r["op"])].append(float(np.mean(r["correct"])))
        keys = ("subset", "mode", "template", "length", "op")
        return [dict(zip(keys, k, strict=True), accuracy=float(np.mean(v)), n=len(v))
                for k, v in sorted(groups.items())]

    def to_jsonl(self, path: str | os.PathLike) -> Path:
        """Write the records atomically as JSONL."""
        return write_jsonl(self.records, path)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike) -> Results:
        """Read records written by ``to_jsonl``."""
        with open(path, encoding="utf-8") as handle:
            return cls([json.loads(line) for line in handle if line.strip()])


def _check_ks(ks: object) -> list[int]:
    return check_sequence(ks, "ks", min_len=1, item=lambda k, name: check_scalar(k, name, "int", min=1))


def _one(model, problem: Problem, n_samples: int, temperature: float, max_tokens: int,
         extractor: Callable[[str], object] | None) -> dict:
    record = {"id": problem.id, "subset": problem.subset, "mode": problem.mode, "template": problem.template,
              "length": problem.target_tokens or 0, "length_tokens": problem.length_tokens, "op": problem.op,
              "n_samples": n_samples, "error": None}
    try:
        replies = model.generate(problem.messages, max_tokens=max_tokens, temperature=temperature, n=n_samples)
        if not isinstance(replies, (list, tuple)):
            raise TypeError(f"generate must return a list of strings, got {type(replies).__name__}")
        replies = [normalize_reply(r, limit=None) for r in list(replies)[:n_samples]]  # verbatim
        if len(replies) < n_samples:
            record["error"] = f"model returned {len(replies)} of {n_samples} replies"
            replies += [""] * (n_samples - len(replies))
    except ModelRequestError:
        raise
    except Exception as error:  # noqa: BLE001 - any model failure is a wrong answer with its reason kept
        record["error"] = f"{type(error).__name__}: {error}"
        replies = [""] * n_samples
    record["replies"] = replies
    record["correct"] = [score(problem, r, extractor) for r in replies]
    return record


def evaluate(model: object, problems: Sequence[Problem], n_samples: int = 1, temperature: float = 0.0,
             max_tokens: int = 4096, workers: int = 4,
             extractor: Callable[[str], object] | None = None) -> Results:
    """Ask ``model`` (a ``ChatModel`` or a plain ``fn(prompt) -> str``) every problem and score the replies.

    Replies that are empty, malformed or missing count as wrong (the reason goes to ``error``); only
    a ``ModelRequestError`` (the server refused the request, e.g. a wrong model name) stops the run.
    Problems are never modified; records come back in problem order.
    """
    n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
    max_tokens = check_scalar(max_tokens, "max_tokens", "int", min=1)
    workers = check_scalar(workers, "workers", "int", min=1)
    temperature = check_scalar(temperature, "temperature", "real", min=0.0)
    if extractor is not None:
        check_callable(extractor, "extractor")
    problems = check_sequence(problems, "problems", min_len=1)
    if not all(isinstance(p, Problem) for p in problems):
        raise TypeError("problems must be a sequence of Problem objects (read_jsonl loads them from a file), got "
                        f"{sorted({type(p).__name__ for p in problems})}")
    chat = as_chat_model(model)

    def run(problem: Problem) -> dict:
        return _one(chat, problem, n_samples, temperature, max_tokens, extractor)

    if workers == 1:
        return Results([run(p) for p in problems])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return Results(list(pool.map(run, problems)))
