"""``icml25 gsm-infinity generate``: write a GSM-∞ benchmark as JSONL (also ``python -m`` this package)."""

from __future__ import annotations

import argparse
import sys

from icml25.reasoning.gsm_infinity.problem import SUBSETS, read_jsonl, write_jsonl
from icml25.reasoning.gsm_infinity.words import TEMPLATES


def _ints(text: str) -> list[int]:
    """``"2,5,10"`` or ``"2-10"`` or ``"2-20:2"`` (start-stop:stride, inclusive) -> a list of ints."""
    out: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part.strip("-"):
                span, _, stride = part.partition(":")
                start, stop = span.split("-")
                out += list(range(int(start), int(stop) + 1, int(stride or 1)))
            else:
                out.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ints like 2,5,10 or 2-20:2, got {text!r}") from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one value")
    return out


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``gsm-infinity`` (with ``generate`` and ``validate``) on an argparse subparsers object."""
    parser = subparsers.add_parser("gsm-infinity", help="GSM-∞ benchmark generator",
                                   description="Generate or validate GSM-∞ benchmarks (JSONL).")
    fill(parser)
    return parser


def fill(parser: argparse.ArgumentParser) -> None:
    """Add the ``generate`` / ``validate`` subcommands to ``parser``."""
    sub = parser.add_subparsers(dest="gsm_command", required=True)
    gen = sub.add_parser("generate", help="write a benchmark as JSONL")
    gen.add_argument("--subset", choices=SUBSETS, default="symbolic")
    gen.add_argument("--ops", type=_ints, default=[2, 5, 10], help="e.g. 2,5,10 or 2-30:2")
    gen.add_argument("--per-op", type=int, default=10)
    gen.add_argument("--lengths", type=_ints, default=[0], help="token targets; 0 = zero noise (e.g. 0,8000)")
    gen.add_argument("--mode", choices=("forward", "reverse"), default="forward")
    gen.add_argument("--template", choices=tuple(TEMPLATES), default="zoo")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--out", required=True, help="output .jsonl (written atomically)")
    val = sub.add_parser("validate", help="check a JSONL benchmark against its schema and re-solve it")
    val.add_argument("path")


def main(args: argparse.Namespace) -> int:
    """Run a parsed ``gsm-infinity`` command; 0 on success, 2 on bad input (one clear line on stderr)."""
    from icml25.reasoning.gsm_infinity.benchmark import make_benchmark  # imported here: keeps `icml25 --help` fast
    from icml25.reasoning.gsm_infinity.solver import SolverError, check

    try:
        if args.gsm_command == "generate":
            problems = make_benchmark(args.subset, args.ops, args.per_op, args.lengths, args.seed,
                                      mode=args.mode, template=args.template)
            path = write_jsonl(problems, args.out)
            print(f"wrote {len(problems)} problems to {path}")
            return 0
        problems = read_jsonl(args.path)
        for problem in problems:
            check(problem)
        print(f"{args.path}: {len(problems)} problems valid; the independent solver agrees on all")
        return 0
    except (ValueError, TypeError, OSError, SolverError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def run(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (``generate ...`` / ``validate ...``) and run it."""
    parser = argparse.ArgumentParser(prog="python -m icml25.reasoning.gsm_infinity",
                                     description="Generate or validate GSM-∞ benchmarks (JSONL).")
    fill(parser)
    return main(parser.parse_args(argv))
