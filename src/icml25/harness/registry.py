"""The catalogue of all 38 papers and discovery of the implemented reproductions."""

from __future__ import annotations

import difflib
import importlib
import json
import pkgutil
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import ModuleType

from icml25.harness.contract import Paper


@dataclass(frozen=True)
class Entry:
    """One paper of the catalogue; ``module`` is its reproduction module when implemented."""

    id: str
    title: str
    short_title: str
    field: str
    seed: str
    abstract_index: int
    abstract: str
    module: ModuleType | None = None
    import_error: str | None = None

    @property
    def paper(self) -> Paper | None:
        return getattr(self.module, "PAPER", None) if self.module else None

    @property
    def status(self) -> str:
        if self.import_error:
            return "broken"
        return "implemented" if self.module else "planned"


@cache
def _catalogue_rows() -> tuple[dict, ...]:
    text = resources.files("icml25.harness").joinpath("catalogue.json").read_text(encoding="utf-8")
    return tuple(json.loads(text))


@cache
def catalogue() -> dict[str, Entry]:
    """All papers of the seeds, by id, with their reproduction modules where they exist."""
    import icml25.reproductions as package

    modules: dict[str, ModuleType] = {}
    errors: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__):
        try:
            modules[info.name] = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception as exc:  # a broken reproduction must not hide the others
            errors[info.name] = f"{type(exc).__name__}: {exc}"
    entries = {}
    for row in _catalogue_rows():
        pid = row["id"]
        entries[pid] = Entry(**row, module=modules.pop(pid, None), import_error=errors.pop(pid, None))
    stray = sorted(set(modules) | set(errors))
    if stray:
        raise RuntimeError(f"reproduction modules not in the catalogue: {', '.join(stray)}")
    return entries


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
