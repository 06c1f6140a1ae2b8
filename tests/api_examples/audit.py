"""Count the outcomes of every mutation of every public name, by paper (the note's before/after table).

Run from the repository root: ``python tests/api_examples/audit.py [--json FILE]``. Point
``PYTHONPATH`` at another checkout's ``src`` to audit that code with today's registry.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from api_examples._core import Example, complete_kwargs, judge, load_registry, outcome, public_names  # noqa: E402

CATEGORIES = ("clear", "ok", "deep", "crash", "silent", "hang", "example fails")


class _Missing:
    """Stands for a name an older checkout does not have: any use fails, so its example counts as failing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> _Missing:
        return _Missing(f"{self.name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise LookupError(f"{self.name} is not in this checkout")


def _missing_attribute(module: str, attr: str) -> _Missing:
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Missing(f"{module}.{attr}")


def _tolerate_missing_names() -> None:
    """Let registry files import on an older checkout: absent names of our modules resolve to ``_Missing``."""
    import importlib

    from api_examples._core import field_packages

    for name in field_packages():
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if not hasattr(module, "__getattr__"):
            module.__getattr__ = lambda attr, _m=name: _missing_attribute(_m, attr)


def paper_modules() -> dict[str, str]:
    from icml25.harness import registry

    return {entry.declared["module"]: pid for pid, entry in registry.catalogue().items()
            if entry.implemented and "module" in entry.declared}


def paper_of(module: str, papers: dict[str, str]) -> str:
    best = max((m for m in papers if module == m or module.startswith(m + ".")), key=len, default=None)
    return papers[best] if best else "shared: " + ".".join(module.split(".")[:2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    _tolerate_missing_names()
    names, registry, papers = public_names(), load_registry(strict=False), paper_modules()
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for key, name in sorted(names.items()):
        example = registry.get(key)
        if not isinstance(example, Example):
            continue
        paper = paper_of(name.module, papers)
        try:
            valid, _ = outcome(example, complete_kwargs(example, name), [])
        except Exception:  # noqa: BLE001 - an example that does not fit this checkout's API
            valid = "crash"
        if valid != "silent":
            table[paper]["example fails"] += 1
            continue
        for row in judge(example, name):
            table[paper][row["category"]] += 1
    total = collections.Counter()
    print("| paper | " + " | ".join(CATEGORIES) + " |")
    print("|---" * (len(CATEGORIES) + 1) + "|")
    for paper in sorted(table):
        total.update(table[paper])
        print(f"| {paper} | " + " | ".join(str(table[paper][c]) for c in CATEGORIES) + " |")
    print("| **all** | " + " | ".join(str(total[c]) for c in CATEGORIES) + " |")
    if args.json:
        args.json.write_text(json.dumps({p: dict(c) for p, c in table.items()}, indent=1))


if __name__ == "__main__":
    main()
