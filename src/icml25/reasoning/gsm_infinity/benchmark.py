"""``make_benchmark``: a deterministic grid of problems over ops and context lengths."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from icml25.reasoning.gsm_infinity.problem import SUBSETS, Problem
from icml25.reasoning.gsm_infinity.realistic import generate_realistic
from icml25.reasoning.gsm_infinity.symbolic import generate_symbolic


def problem_seed(seed: int, op: int, index: int) -> int:
    """The seed of problem ``index`` at ``op``: a hash, the same on every machine and at every length."""
    return int(hashlib.sha256(f"gsm-infinity:{seed}:{op}:{index}".encode()).hexdigest()[:12], 16)


def make_benchmark(subset: str, ops: Sequence[int], per_op: int, lengths: Sequence[int | None] = (None,),
                   seed: int = 0, *, mode: str = "forward", template: str = "zoo",
                   tokenizer: Callable[[str], int] | None = None, max_attempts: int = 10_000) -> list[Problem]:
    """``per_op`` problems for every op and length (``None``/0 = zero noise, else a token target).

    The same ``(seed, op, index)`` gives the same core problem at every length, so accuracy at
    different lengths compares the same reasoning with more noise.  Same arguments, same problems.
    """
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    if isinstance(per_op, bool) or not isinstance(per_op, int) or per_op < 1:
        raise ValueError(f"per_op must be a positive int, got {per_op!r}")
    if not ops:
        raise ValueError("ops must not be empty")
    if subset == "symbolic" and mode != "forward":
        raise ValueError("the symbolic subset has only the forward mode")
    problems = []
    for length in lengths:
        target = length or None
        for op in ops:
            for index in range(per_op):
                pseed = problem_seed(seed, op, index)
                if subset == "symbolic":
                    problems.append(generate_symbolic(op, target_tokens=target, tokenizer=tokenizer, seed=pseed))
                else:
                    problems.append(generate_realistic(op, difficulty=subset, mode=mode, template=template,
                                                       target_tokens=target, tokenizer=tokenizer, seed=pseed,
                                                       max_attempts=max_attempts))
    return problems
