"""Answer extraction and exact-match scoring (deterministic; an LLM extractor can be plugged in)."""

from __future__ import annotations

import re
from collections.abc import Callable

from icml25.reasoning.gsm_infinity.problem import Problem
from icml25.utils.validation import check_callable, check_instance

MAX_REPLY_CHARS = 200_000  # longer replies are scored on their last MAX_REPLY_CHARS characters
_VARIABLE = re.compile(r"\bV\d+\b")
_NUMBER = r"-?\d[\d,]*(?:\.\d+)?"
_MARKERS = (  # priority list: the first marker found (its last occurrence) wins
    re.compile(r"answer\s*:", re.I),
    re.compile(r"\\boxed\{", re.I),
    re.compile(r"final answer", re.I),
)
_IS_NUMBER = re.compile(r"\bis\s*(" + _NUMBER + ")", re.I)


def normalize_reply(reply: object, limit: int | None = MAX_REPLY_CHARS) -> str:
    """Turn any model reply into text: ``None`` -> ``""``, bytes decoded leniently, the last ``limit`` chars kept."""
    if reply is None:
        return ""
    if isinstance(reply, (bytes, bytearray)):
        reply = bytes(reply).decode("utf-8", errors="replace")
    if not isinstance(reply, str):
        reply = str(reply)
    return reply if limit is None else reply[-limit:]


def _final_part(text: str) -> str:
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    found = [m.end() for m in re.finditer(r"answer", text, re.I)]
    return text[found[-1]:] if found else text


def extract_variables(reply: object) -> list[str] | None:
    """Variable names in the final answer (after the last "answer" marker or ``</think>``), sorted.

    Returns ``[]`` for an explicit empty answer ("None", "no variables") and ``None`` when no
    answer can be found.
    """
    final = _final_part(normalize_reply(reply))
    names = sorted(set(_VARIABLE.findall(final)))
    if names:
        return names
    if re.search(r"\b(none|no variables?|empty)\b", final, re.I):
        return []
    return None


def extract_integer(reply: object) -> int | None:
    """The integer answer: after the last "Answer:", else ``\\boxed{``, else "final answer", else the last "is N"."""
    text = normalize_reply(reply)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    for marker in _MARKERS:
        hits = list(marker.finditer(text))
        if hits:
            match = re.search(_NUMBER, text[hits[-1].end():])
            if match:
                return _to_int(match.group(0))
    hits = list(_IS_NUMBER.finditer(text))
    return _to_int(hits[-1].group(1)) if hits else None


def _to_int(token: str) -> int | None:
    token = token.replace(",", "")
    try:
        value = float(token)
    except ValueError:
        return None
    return int(value) if value.is_integer() and abs(value) < 1e18 else None


def extract(problem: Problem, reply: object, extractor: Callable[[str], object] | None = None) -> object:
    """Extract the answer in ``problem``'s form; ``extractor(text)`` (e.g. an LLM call) overrides the regex."""
    text = normalize_reply(reply)
    if extractor is not None:
        return extractor(text)
    return extract_variables(text) if problem.subset == "symbolic" else extract_integer(text)


def score(problem: Problem, reply: object, extractor: Callable[[str], object] | None = None) -> bool:
    """Exact match: the set of variables (symbolic) or the integer (medium/hard). Never raises on a bad reply."""
    check_instance(problem, "problem", Problem, "a Problem")
    if extractor is not None:
        check_callable(extractor, "extractor")
    try:
        predicted = extract(problem, reply, extractor)
    except Exception:  # noqa: BLE001 - a broken extractor or reply is a wrong answer, not a crash
        return False
    if problem.subset == "symbolic":
        return isinstance(predicted, list) and sorted(predicted) == sorted(problem.answer)
    return isinstance(predicted, int) and not isinstance(predicted, bool) and predicted == problem.answer
