"""``python -m icml25.symbolic.sr_pareto_fronts``: compute an APO front, or score expressions against one."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from icml25.symbolic.sr_pareto_fronts.fitting import SCIPY_METHODS
from icml25.symbolic.sr_pareto_fronts.front import apo_front, read_front, score_against_front


def load_csv(path: str | Path, target: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A numeric CSV with a header row -> (X, y, feature names); y is ``target`` or the last column."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        header = [name.strip() for name in handle.readline().strip().split(",")]
    table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if table.shape[1] != len(header) or len(header) < 2:
        raise ValueError(f"{path}: need a header and >= 2 numeric columns, got {header}")
    column = len(header) - 1 if target is None else header.index(target) if target in header else -1
    if column < 0:
        raise ValueError(f"{path}: no column {target!r}; columns are {header}")
    features = [i for i in range(len(header)) if i != column]
    return table[:, features], table[:, column], [header[i] for i in features]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m icml25.symbolic.sr_pareto_fronts", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    front = commands.add_parser("front", help="exhaustive search: write the APO front of a dataset as CSV")
    front.add_argument("data", help="CSV with a header; target = last column unless --target")
    front.add_argument("--target")
    front.add_argument("--head-length", type=int, default=2)
    front.add_argument("--method", default="BFGS", choices=SCIPY_METHODS)
    front.add_argument("--seed", type=int, default=11284)
    front.add_argument("--no-standardize", action="store_true")
    front.add_argument("--n-jobs", type=int, default=1)
    front.add_argument("--which", default="best", choices=("best", "front", "table"))
    front.add_argument("--out", required=True)
    score = commands.add_parser("score", help="score expressions (one per line) against a front CSV")
    score.add_argument("front")
    score.add_argument("data")
    score.add_argument("expressions", help="text file, one expression per line (infix, gplearn or prefix)")
    score.add_argument("--target")
    score.add_argument("--head-length", type=int, help="the front's head length (enables the grammar test)")
    score.add_argument("--no-standardize", action="store_true")
    score.add_argument("--out", help="also write one CSV line per expression")
    args = parser.parse_args(argv)
    try:
        X, y, _ = load_csv(args.data, args.target)
        if args.command == "front":
            result = apo_front(X, y, head_length=args.head_length, method=args.method, seed=args.seed,
                               standardize=not args.no_standardize, n_jobs=args.n_jobs)
            result.to_csv(args.out, which=args.which)
            print(json.dumps({"out": args.out, "pareto_front": [[r.length, r.structure, r.r2]
                                                                 for r in result.pareto_front()]}))
        else:
            lines = Path(args.expressions).read_text(encoding="utf-8").splitlines()
            card = score_against_front(read_front(args.front), [s for s in lines if s.strip()], X, y,
                                       standardize=not args.no_standardize, head_length=args.head_length)
            if args.out:
                card.to_csv(args.out)
            print(json.dumps(card.summary()))
    except (OSError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
