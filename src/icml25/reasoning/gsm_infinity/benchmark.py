"""``make_benchmark``: a deterministic grid of problems over ops and context lengths."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from icml25.reasoning.gsm_infinity.problem import SUBSETS, Problem
from icml25.reasoning.gsm_infinity.realistic import generate_realistic
from icml25.reasoning.gsm_infinity.symbolic import generate_symbolic
from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_choice, check_scalar, check_sequence


def problem_seed(seed: int, op: int, index: int) -> int:
    """The seed of problem ``index`` at ``op``: a hash, the same on every machine and at every length."""
    seed = check_scalar(seed, "seed", "int", min=0)
    op, index = check_scalar(op, "op", "int", min=1), check_scalar(index, "index", "int", min=0)
    return int(hashlib.sha256(f"gsm-infinity:{seed}:{op}:{index}".encode()).hexdigest()[:12], 16)


def make_benchmark(subset: str, ops: Sequence[int], per_op: int, lengths: Sequence[int | None] = (None,),
                   seed: Seed = 0, *, mode: str = "forward", template: str = "zoo",
                   tokenizer: Callable[[str], int] | None = None, max_attempts: int = 10_000) -> list[Problem]:
    """``per_op`` problems for every op and length (``None``/0 = zero noise, else a token target).

    The same ``(seed, op, index)`` gives the same core problem at every length, so accuracy at
    different lengths compares the same reasoning with more noise.  Same arguments, same problems.
    ``seed`` is an int >= 0, or a NumPy Generator / ``None`` from which one is drawn.
    """
    check_choice(subset, "subset", SUBSETS)
    ops = check_sequence(ops, "ops", min_len=1, item=lambda v, name: check_scalar(v, name, "int"))
    per_op = check_scalar(per_op, "per_op", "int", min=1)
    lengths = check_sequence(lengths, "lengths", min_len=1,
                             item=lambda v, name: v if v is None else check_scalar(v, name, "int", min=0))
    seed = int_seed(seed)
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
