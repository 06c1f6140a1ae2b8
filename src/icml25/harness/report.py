"""Turn stored results into ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

import base64
import html
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from icml25.harness.contract import SCALES
from icml25.harness.registry import Entry, catalogue
from icml25.harness.store import load_result, result_path
from icml25.harness.store import warn as default_warn


def catalogue_markdown(entries: Iterable[Entry]) -> str:
    """The README's table of papers (``icml25 list --format markdown``)."""
    lines = ["| id | field | paper | status |", "| --- | --- | --- | --- |"]
    for e in entries:
        title = e.title.replace("|", "\\|")
        lines.append(f"| `{e.id}` | {e.field} | {title} | {e.status} |")
    return "\n".join(lines) + "\n"


def committed_full_path(root: Path, pid: str) -> Path:
    """Where a committed full-scale result lives: ``<root>/full/<id>.json``."""
    return Path(root) / "full" / f"{pid}.json"


def collect(root: Path, warn: Callable[[str], None] | None = default_warn) -> list[tuple[Entry, dict[str, dict]]]:
    """For every paper with results: its entry and stored records by label (smoke/quick/full).

    Corrupt files, JSON that is not a result record, and JSON files that belong to no paper's
    scale are reported to ``warn`` (one line naming the file) and skipped.
    """
    found = []
    known = set()
    for entry in catalogue().values():
        records = {}
        for scale in SCALES:
            path = result_path(root, entry.id, scale)
            known.add(path)
            record = load_result(path, warn=warn)
            if record is not None:
                records[scale] = record
        known.add(committed_full_path(root, entry.id))
        committed = load_result(committed_full_path(root, entry.id), warn=warn)
        if committed is not None and "full" not in records:
            records["full"] = committed
        if records:
            found.append((entry, records))
    if warn is not None:
        for path in sorted(Path(root).glob("*/*.json")):
            if path not in known:
                warn(f"{path}: not the result of a registered paper and scale; skipped")
    return found


def short_value(value) -> str:
    """A compact rendering of a measured value: 4 significant digits, nested dicts and lists kept."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {short_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(short_value(v) for v in value) + "]"
    return str(value)


def _cell(value) -> str:
    return short_value(value).replace("|", "\\|").replace("\n", " ")


def _markdown(found: list[tuple[Entry, dict[str, dict]]]) -> str:
    out = ["# icml25 reproduction report", ""]
    if not found:
        out.append("No stored results yet: run `icml25 reproduce` first.")
    out += ["| paper | scale | claims holding | seconds | seeds |", "| --- | --- | --- | --- | --- |"]
    for entry, records in found:
        for scale, r in records.items():
            held = sum(c["holds"] for c in r["claims"])
            out.append(f"| `{entry.id}` | {scale} | {held}/{len(r['claims'])} | {r['seconds']:.1f} | "
                       f"{len(r['seeds'])} |")
    out.append("")
    for entry, records in found:
        out += [f"## {entry.id}: {entry.title}", ""]
        out += ["| scale | claim | paper's figure | measured | baseline | holds |",
                "| --- | --- | --- | --- | --- | --- |"]
        for scale, r in records.items():
            for c in r["claims"]:
                out.append(f"| {scale} | {_cell(c['text'])} | {_cell(c['paper'])} | {_cell(c['measured'])} | "
                           f"{_cell(c['baseline'])} | {'yes' if c['holds'] else '**no**'} |")
        out.append("")
        for scale, r in records.items():
            for fig in r["figures"]:
                out.append(f"![{entry.id} {scale}]({fig})")
        out.append("")
    return "\n".join(out) + "\n"


def _html(found: list[tuple[Entry, dict[str, dict]]], root: Path) -> str:
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>icml25 report</title><style>",
             "body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
             "vertical-align:top}th{background:#f3f3f3}.no{color:#b00;font-weight:bold}.yes{color:#070}"
             "img{max-width:100%;border:1px solid #eee;margin:4px 0}",
             "</style></head><body><h1>icml25 reproduction report</h1>"]
    if not found:
        parts.append("<p>No stored results yet: run <code>icml25 reproduce</code> first.</p>")
    parts.append("<table><tr><th>paper</th><th>scale</th><th>claims holding</th><th>seconds</th>"
                 "<th>seeds</th></tr>")
    for entry, records in found:
        for scale, r in records.items():
            held = sum(c["holds"] for c in r["claims"])
            parts.append(f"<tr><td><a href='#{entry.id}'>{esc(entry.id)}</a></td><td>{scale}</td>"
                         f"<td>{held}/{len(r['claims'])}</td><td>{r['seconds']:.1f}</td>"
                         f"<td>{len(r['seeds'])}</td></tr>")
    parts.append("</table>")
    for entry, records in found:
        parts.append(f"<h2 id='{entry.id}'>{esc(entry.id)}: {esc(entry.title)}</h2>")
        parts.append("<table><tr><th>scale</th><th>claim</th><th>paper's figure</th><th>measured</th>"
                     "<th>baseline</th><th>holds</th></tr>")
        for scale, r in records.items():
            for c in r["claims"]:
                verdict = "<span class='yes'>yes</span>" if c["holds"] else "<span class='no'>no</span>"
                parts.append(f"<tr><td>{scale}</td><td>{esc(_cell(c['text']))}</td>"
                             f"<td>{esc(_cell(c['paper']))}</td><td>{esc(_cell(c['measured']))}</td>"
                             f"<td>{esc(_cell(c['baseline']))}</td><td>{verdict}</td></tr>")
        parts.append("</table>")
        for scale, r in records.items():
            for fig in r["figures"]:
                path = Path(root) / fig
                if path.is_file():
                    data = base64.b64encode(path.read_bytes()).decode("ascii")
                    parts.append(f"<figure><img alt='{esc(fig)}' src='data:image/png;base64,{data}'>"
                                 f"<figcaption>{esc(scale)}: {esc(path.name)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_report(
    root: Path = Path("results"), warn: Callable[[str], None] | None = default_warn
) -> tuple[Path, Path]:
    """Write ``<root>/report.md`` and ``<root>/report.html`` from the stored results.

    Corrupt or foreign JSON files in ``root`` are reported to ``warn`` and skipped.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    found = collect(root, warn=warn)
    md, page = root / "report.md", root / "report.html"
    _write_text_atomic(md, _markdown(found))
    _write_text_atomic(page, _html(found, root))
    return md, page
