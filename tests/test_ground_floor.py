"""The ground floor holds across the tree: validation and randomness rules live in ``icml25.utils`` alone."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "icml25"
SHARED = ("utils", "harness")

PRIVATE_VALIDATOR = re.compile(r"^\s*def (_check_int|_positive_int|_check_positive|_check_count|_positive)\b", re.M)
GLOBAL_TORCH_STATE = re.compile(r"torch\.manual_seed\(|set_num_threads\(|num_threads\s*:\s*int\s*=\s*1\b")
PRIVATE_IMPORT = re.compile(r"^from icml25\.([\w.]+) import .*\b(_[a-z]\w*)", re.M)


def _library_files():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        yield rel, path.read_text(encoding="utf-8")


def test_no_private_validator_outside_utils():
    found = [f"{rel}: {m.group(1)}" for rel, text in _library_files() if rel.parts[0] != "utils"
             for m in PRIVATE_VALIDATOR.finditer(text)]
    assert found == []


def test_library_code_never_touches_global_torch_state():
    found = [f"{rel}: {m.group(0)}" for rel, text in _library_files() if rel.parts[0] not in SHARED
             for m in GLOBAL_TORCH_STATE.finditer(text)]
    assert found == []


def test_no_module_borrows_a_private_name_from_another_module():
    found = []
    for rel, text in _library_files():
        parts = rel.with_suffix("").parts
        own = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for m in PRIVATE_IMPORT.finditer(text):
            if m.group(1) != own:
                found.append(f"{rel}: from icml25.{m.group(1)} import {m.group(2)}")
    assert found == []


def test_no_reproduction_sets_the_figure_backend():
    found = [str(rel) for rel, text in _library_files()
             if 'matplotlib.use("Agg")' in text and rel.parts[0] != "harness"]
    assert found == []


def test_user_facing_text_never_mentions_the_internal_spec():
    root = SRC.parents[1]
    files = [*SRC.rglob("*.py"), *(root / "docs").rglob("*.md"), root / "README.md"]
    found = [f"{p.relative_to(root)}:{i}" for p in files
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bbriefs?\b", line, re.I)]
    assert found == []
