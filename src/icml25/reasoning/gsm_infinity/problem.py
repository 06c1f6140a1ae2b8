"""The ``Problem`` record, its JSON schema, the default token counter and atomic JSONL files."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icml25.utils.validation import check_callable

SCHEMA_VERSION = "gsm_infinity/problem/v1"
SUBSETS = ("symbolic", "medium", "hard")
MODES = ("forward", "reverse")
TEMPLATES = ("symbolic", "zoo", "school", "movie")

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Default token counter: words, numbers and single punctuation marks (about one LLM token each).

    Any ``tokenizer: Callable[[str], int]`` can replace it, e.g. ``lambda s: len(hf_tok(s).input_ids)``.
    """
    return len(_TOKEN.findall(text))


def resolve_tokenizer(tokenizer: Callable[[str], int] | None) -> Callable[[str], int]:
    """Return ``tokenizer`` (checked to be callable) or the default regex counter."""
    if tokenizer is None:
        return count_tokens
    return check_callable(tokenizer, "tokenizer")


@dataclass
class Problem:
    """One generated problem with everything needed to render, solve and score it.

    ``statements`` are the rendered sentences in context order and ``equations`` their structured
    form, aligned one to one (``equations[i]`` is what ``statements[i]`` says). ``answer`` is a
    sorted list of variable names (symbolic) or an integer (medium/hard). ``necessary`` indexes the
    statements the answer depends on; ``query`` is the asked value (symbolic) or parameter key.
    """

    id: str
    subset: str
    mode: str
    template: str
    op: int
    seed: int
    n_noise: int
    target_tokens: int | None
    length_tokens: int
    statements: list[str]
    equations: list[dict]
    necessary: list[int]
    query: str
    question: str
    messages: list[dict]
    answer: Any
    solution: str
    schema: str = field(default=SCHEMA_VERSION)

    @property
    def context(self) -> str:
        """The statements joined as they appear in the prompt."""
        return " ".join(self.statements)

    @property
    def prompt(self) -> str:
        """The text of the last user message (what a model is asked)."""
        return self.messages[-1]["content"]

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (one JSONL line)."""
        return asdict(self)

    @classmethod
    def from_json(cls, record: Any) -> Problem:
        """Build a ``Problem`` from a dict, validating it against the schema (``ValueError`` if not)."""
        validate_record(record)
        return cls(**{name: record[name] for name in _FIELDS})


_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,), "subset": (str,), "mode": (str,), "template": (str,), "op": (int,), "seed": (int,),
    "n_noise": (int,), "target_tokens": (int, type(None)), "length_tokens": (int,), "statements": (list,),
    "equations": (list,), "necessary": (list,), "query": (str,), "question": (str,), "messages": (list,),
    "answer": (list, int), "solution": (str,), "schema": (str,),
}


def validate_record(record: Any) -> None:
    """Check one problem record against the ``gsm_infinity/problem/v1`` schema; raise ``ValueError``."""
    if not isinstance(record, dict):
        raise ValueError(f"a problem record must be a JSON object, got {type(record).__name__}")
    missing = [name for name in _FIELDS if name not in record]
    if missing:
        raise ValueError(f"problem record lacks fields {missing}")
    extra = sorted(set(record) - set(_FIELDS))
    if extra:
        raise ValueError(f"problem record has unknown fields {extra}")
    for name, types in _FIELDS.items():
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, types):
            allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ValueError(f"field {name!r} must be {allowed}, got {type(value).__name__}")
    if record["schema"] != SCHEMA_VERSION:
        raise ValueError(f"schema must be {SCHEMA_VERSION!r}, got {record['schema']!r}")
    for name, allowed in (("subset", SUBSETS), ("mode", MODES), ("template", TEMPLATES)):
        if record[name] not in allowed:
            raise ValueError(f"field {name!r} must be one of {allowed}, got {record[name]!r}")
    if record["op"] < 1 or record["n_noise"] < 0:
        raise ValueError("op must be >= 1 and n_noise >= 0")
    if len(record["statements"]) != len(record["equations"]):
        raise ValueError("statements and equations must have the same length")
    if not all(isinstance(s, str) for s in record["statements"]):
        raise ValueError("statements must be strings")
    for eq in record["equations"]:
        if not (isinstance(eq, dict) and isinstance(eq.get("target"), str) and isinstance(eq.get("op"), str)
                and isinstance(eq.get("args"), list)):
            raise ValueError(f"each equation needs str 'target', str 'op' and list 'args', got {eq!r}")
    n = len(record["statements"])
    if not all(isinstance(i, int) and 0 <= i < n for i in record["necessary"]):
        raise ValueError("necessary must index the statements")
    messages = record["messages"]
    if not messages or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                               and isinstance(m.get("content"), str) for m in messages):
        raise ValueError("messages must be a non-empty list of {'role': str, 'content': str}")
    symbolic = record["subset"] == "symbolic"
    if symbolic and not (isinstance(record["answer"], list) and all(isinstance(a, str) for a in record["answer"])):
        raise ValueError("a symbolic answer must be a list of variable names")
    if not symbolic and not isinstance(record["answer"], int):
        raise ValueError("a medium/hard answer must be an integer")


def write_jsonl(records: Iterable[Any], path: str | os.PathLike) -> Path:
    """Write problems (or dicts) as JSONL atomically: a temp file in the same folder, then rename.

    Nothing is left at ``path`` if any record fails (``ValueError``/``TypeError`` propagate).
    """
    if isinstance(records, (str, bytes, dict)) or not isinstance(records, Iterable):
        raise TypeError(f"records must be an iterable of Problems or dicts, got {type(records).__name__}")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                data = record.to_json() if hasattr(record, "to_json") else record
                if not isinstance(data, dict):
                    raise TypeError(f"records must hold Problems or dicts, got {type(record).__name__}")
                handle.write(json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def read_jsonl(path: str | os.PathLike) -> list[Problem]:
    """Load a benchmark written by ``write_jsonl``; every line is validated against the schema."""
    problems = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                problems.append(Problem.from_json(json.loads(line)))
            except (json.JSONDecodeError, ValueError) as error:
                raise ValueError(f"{path}:{number}: invalid problem record: {error}") from None
    return problems
