"""The agents' language-model clients: one protocol, ``complete(messages, temperature) -> str``.

:class:`OpenAICompatibleClient` talks to any OpenAI-compatible chat-completions endpoint through the
``openai`` package (base URL, model and key from arguments or the ``REP_CODEGEN_BASE_URL``,
``REP_CODEGEN_MODEL``, ``OPENAI_API_KEY`` environment variables); :class:`ScriptedClient` is the offline
stand-in that writes code from the operator library (:mod:`icml25.materials.rep_codegen.blocks`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from icml25.materials.rep_codegen.blocks import CUTOFFS, FEATURES, NEIGHBOURS, check_genes, compose, genes_of
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_instance, check_scalar, check_sequence

Message = dict[str, str]
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


class LLMError(RuntimeError):
    """A language-model call failed after its retries (HTTP error, timeout, empty reply)."""


class LLMClient(Protocol):
    """Anything with ``complete(messages, temperature) -> str`` is an agent back-end."""

    def complete(self, messages: Sequence[Message], temperature: float = 0.7) -> str: ...


def check_messages(messages: Any) -> list[Message]:
    """``messages`` as a list of ``{"role", "content"}`` dicts with string values."""
    messages = check_sequence(messages, "messages", min_len=1)
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise TypeError(f"messages[{i}] must be a dict with string 'role' and 'content', got {m!r}")
    return messages


def extract_code(reply: str) -> str:
    """The last fenced Python block of a reply that defines ``represent`` (else the last block; else the
    whole reply if it defines ``represent``); a ``ValueError`` when the reply holds no code."""
    check_instance(reply, "reply", str)
    blocks = _CODE.findall(reply)
    defining = [b for b in blocks if "def represent" in b]
    if defining or blocks:
        return (defining or blocks)[-1].strip() + "\n"
    if "def represent" in reply:
        return reply.strip() + "\n"
    raise ValueError(f"reply must contain a ```python code block, got {reply[:80]!r}")


class OpenAICompatibleClient:
    """Chat completions from an OpenAI-compatible server with the ``openai`` package.

    Parameters
    ----------
    base_url, model, api_key : the endpoint; ``None`` reads ``REP_CODEGEN_BASE_URL``, ``REP_CODEGEN_MODEL`` and
        ``OPENAI_API_KEY`` (a key is optional for local servers).
    timeout : seconds per request.
    retries : further attempts after a failed or empty reply, with exponential backoff from ``backoff`` s.
    """

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 2, backoff: float = 1.0) -> None:
        base_url = base_url if base_url is not None else os.environ.get("REP_CODEGEN_BASE_URL")
        model = model if model is not None else os.environ.get("REP_CODEGEN_MODEL")
        api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "not-needed")
        for name, value in (("base_url", base_url), ("model", model), ("api_key", api_key)):
            check_instance(value, name, str, "a string (or set its environment variable)")
            if not value:
                raise ValueError(f"{name} must be a non-empty string (or set its environment variable)")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        self.base_url, self.model = base_url, model
        self.timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
        self.retries = check_scalar(retries, "retries", "int", min=0)
        self.backoff = check_scalar(backoff, "backoff", "real", min=0.0)
        from openai import OpenAI

        self._client = OpenAI(base_url=base_url, api_key=api_key, timeout=self.timeout, max_retries=0)

    def complete(self, messages: Sequence[Message], temperature: float = 0.7) -> str:
        """The reply's text; :class:`LLMError` after ``retries`` further failed attempts."""
        import openai

        messages = check_messages(messages)
        temperature = check_scalar(temperature, "temperature", "real", min=0.0, max=2.0)
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._client.chat.completions.create(model=self.model, messages=messages,
                                                                temperature=temperature)
                text = response.choices[0].message.content if response.choices else None
            except (openai.OpenAIError, IndexError, AttributeError) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if text and text.strip():
                return text
            last = "empty reply"
        raise LLMError(f"{self.model} at {self.base_url} failed after {self.retries + 1} attempts: {last}")


def random_genes(rng: np.random.Generator) -> dict[str, Any]:
    """Genes drawn uniformly: neighbour rule, cutoff, and each feature block in or out with probability 1/2."""
    rng = as_generator(rng, "rng")
    return {"neighbours": NEIGHBOURS[rng.integers(len(NEIGHBOURS))], "cutoff": CUTOFFS[rng.integers(len(CUTOFFS))],
            "features": tuple(f for f in FEATURES if rng.random() < 0.5)}


def mutate(genes: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """One edit: switch the neighbour rule or the cutoff, or add, remove or replace one feature block."""
    rng = as_generator(rng, "rng")
    genes = check_genes(genes)
    out = {**genes, "features": list(genes["features"])}
    op = ("neighbours", "cutoff", "add", "remove", "replace")[rng.integers(5)]
    absent = [f for f in FEATURES if f not in out["features"]]
    if op == "neighbours":
        out["neighbours"] = [n for n in NEIGHBOURS if n != out["neighbours"]][0]
    elif op == "cutoff":
        out["cutoff"] = [c for c in CUTOFFS if c != out["cutoff"]][0]
    elif op == "add" and absent:
        out["features"].append(absent[rng.integers(len(absent))])
    elif op == "remove" and out["features"]:
        out["features"].pop(rng.integers(len(out["features"])))
    elif out["features"] and absent:
        out["features"][rng.integers(len(out["features"]))] = absent[rng.integers(len(absent))]
    return {**out, "features": tuple(out["features"])}


def crossover(a: dict[str, Any], b: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The union of two parents' feature blocks; neighbour rule and cutoff each from a random parent."""
    rng = as_generator(rng, "rng")
    a, b = check_genes(a, "a"), check_genes(b, "b")
    return {"neighbours": (a, b)[rng.integers(2)]["neighbours"], "cutoff": (a, b)[rng.integers(2)]["cutoff"],
            "features": tuple(sorted(set(a["features"]) | set(b["features"])))}


class ScriptedClient:
    """A deterministic offline agent with the :class:`LLMClient` interface.

    It reads the parents' code from the prompt's fenced blocks (their ``# genes:`` header) and answers with one
    fenced block of new code: a mutation of one parent, or a crossover of two (followed by a mutation with
    probability 1/2); with no readable parent it writes random genes. It does not read the feedback: the
    evolutionary selection alone does the work, which is what makes it an honest test of the loop.
    ``temperature`` is accepted and ignored.
    """

    def __init__(self, seed: Seed = 0) -> None:
        self.rng = as_generator(seed)
        self.calls = 0

    def complete(self, messages: Sequence[Message], temperature: float = 0.7) -> str:
        messages = check_messages(messages)
        check_scalar(temperature, "temperature", "real", min=0.0, max=2.0)
        self.calls += 1
        parents = [g for g in (genes_of(b) for b in _CODE.findall(messages[-1]["content"])) if g is not None]
        if not parents:
            genes = random_genes(self.rng)
        elif len(parents) == 1:
            genes = mutate(parents[0], self.rng)
        else:
            genes = crossover(parents[0], parents[1], self.rng)
            if self.rng.random() < 0.5:
                genes = mutate(genes, self.rng)
        return f"Here is the new representation.\n\n```python\n{compose(genes)}```\n"
