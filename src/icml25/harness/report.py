"""Turn stored results into ``report.md`` and a self-contained ``report.html``.

One section per paper: its findings and its checks in separate tables (claim | paper reports |
criterion | ours | baseline | verdict, quick and full side by side), a provenance line per scale,
and the figures captioned by their titles.  Smoke runs are plumbing checks and are not shown as
evidence.  Records written before claims had ``criterion`` and ``kind`` are read as findings whose
criterion is their old ``paper`` field.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from icml25.harness.registry import Entry, catalogue
from icml25.harness.store import committed_path, load_result, result_path, write_bytes_atomic
from icml25.harness.store import warn as default_warn

EVIDENCE = ("quick", "full")  # the scales shown as evidence; smoke only proves the pipeline runs
CHECKOUT = Path(__file__).resolve().parents[3]
SUMMARY_KEYS = {"mean", "sd", "n"}


def catalogue_markdown(entries: Iterable[Entry]) -> str:
    """The README's table of papers (``icml25 list --format markdown``); independent of installed extras."""
    lines = ["| id | field | paper | status |", "| --- | --- | --- | --- |"]
    for e in entries:
        title = e.title.replace("|", "\\|")
        lines.append(f"| `{e.id}` | {e.field} | {title} | {'implemented' if e.implemented else 'planned'} |")
    return "\n".join(lines) + "\n"


def readme_headline(entries: Iterable[Entry]) -> str:
    """The README's first line: how many of the catalogue's papers are implemented."""
    entries = list(entries)
    done = sum(e.implemented for e in entries)
    return f"# icml25: {done} of {len(entries)} ICML 2025 papers implemented\n"


# ---------------------------------------------------------------- reading records


def normalize_claim(claim: dict[str, Any]) -> dict[str, Any]:
    """A stored claim in the current form; an old claim's ``paper`` was its criterion."""
    if "criterion" not in claim:
        return {"text": claim["text"], "kind": "finding", "paper": None, "criterion": claim.get("paper"),
                "measured": claim.get("measured"), "baseline": claim.get("baseline"), "holds": bool(claim["holds"])}
    return {"kind": "finding", "paper": None, **claim, "holds": bool(claim["holds"])}


@dataclass
class Section:
    """One paper's stored evidence: records by scale (quick, full) and where each came from."""

    entry: Entry
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, Path] = field(default_factory=dict)
    smoke: dict[str, Any] | None = None


def collect(root: Path, warn: Callable[[str], None] | None = default_warn) -> list[Section]:
    """Every paper with stored results under ``root`` (a full result committed as ``full/<id>.json``
    is used where no newer ``<id>/full.json`` exists).

    Corrupt files, JSON that is not a result record, and JSON files that belong to no paper's
    scale are reported to ``warn`` (one line naming the file) and skipped.
    """
    root = Path(root)
    found, known = [], set()
    for entry in catalogue().values():
        section = Section(entry)
        for scale in ("smoke", *EVIDENCE):
            path = result_path(root, entry.id, scale)
            known.add(path)
            record = load_result(path, warn=warn)
            if record is None:
                continue
            if scale == "smoke":
                section.smoke = record
            else:
                section.records[scale], section.sources[scale] = record, path
        committed = committed_path(root, entry.id)
        known.add(committed)
        record = load_result(committed, warn=warn)
        if record is not None and "full" not in section.records:
            section.records["full"], section.sources["full"] = record, committed
        if section.records or section.smoke:
            found.append(section)
    if warn is not None:
        for path in sorted(root.glob("*/*.json")):
            if path not in known and path.parent.name != "bench":  # benchmark records: see icml25.harness.bench
                warn(f"{path}: not the result of a registered paper and scale; skipped")
    return found


# ---------------------------------------------------------------- values and verdicts


def is_summary(value: Any) -> bool:
    """Whether ``value`` is a :func:`icml25.harness.stats.summary` over seeds."""
    return isinstance(value, dict) and set(value) >= SUMMARY_KEYS


def number(value: Any) -> str:
    """A number with 4 significant digits (ints as they are)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def short_value(value: Any) -> str:
    """A value as a person reads it: ``mean ± sd (n=3)`` for a seed summary, 4 significant digits."""
    if value is None:
        return "–"
    if is_summary(value):
        if value["sd"] is None:
            return f"{number(value['mean'])} (n={value['n']})"
        return f"{number(value['mean'])} ± {number(value['sd'])} (n={value['n']})"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {short_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(short_value(v) for v in value) + "]"
    return number(value)


def sub_rows(value: Any) -> dict[str, Any] | None:
    """The named values of a dict metric (shown as sub-rows), ``None`` for a single value."""
    return value if isinstance(value, dict) and not is_summary(value) else None


def verdict(claim: dict[str, Any], known_misses: dict[str, str]) -> tuple[str, str]:
    """``("holds" | "known miss" | "fails", reason)`` for one stored claim."""
    if claim["holds"]:
        return "holds", ""
    if claim["text"] in known_misses:
        return "known miss", known_misses[claim["text"]]
    return "fails", ""


def tally(sections: list[Section], scale: str) -> dict[str, int]:
    """Papers with results at ``scale`` and their findings that hold / are known misses / fail; checks."""
    counts = {"papers": 0, "holds": 0, "known miss": 0, "fails": 0, "checks": 0, "checks holding": 0}
    for section in sections:
        record = section.records.get(scale)
        if record is None:
            continue
        counts["papers"] += 1
        misses = section.entry.known_misses
        for claim in map(normalize_claim, record["claims"]):
            if claim["kind"] == "check":
                counts["checks"] += 1
                counts["checks holding"] += claim["holds"]
            else:
                counts[verdict(claim, misses)[0]] += 1
    return counts


def docs_link(root: Path, pid: str) -> str:
    """The link from the report in ``root`` to the paper's calibration notes."""
    page = CHECKOUT / "docs" / "papers" / f"{pid}.md"
    target = os.path.relpath(page, Path(root).resolve()) if page.is_file() else f"docs/papers/{pid}.md"
    return target.replace(os.sep, "/") + "#calibration-notes"


def provenance(record: dict[str, Any]) -> str:
    """Where and how a record was computed, in one line; says what an older record did not record."""
    machine = record.get("machine") or {}
    versions = record.get("versions") or {}
    git = record.get("git")
    known = {
        "seeds": f"seeds {', '.join(map(str, record.get('seeds', [])))}, {record['seconds']:.1f} s",
        "commit": f"commit {git[:12]}{'-dirty' if git.endswith('-dirty') else ''}" if git else None,
        "date": record.get("date"),
        "machine": f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores" if machine else None,
        "command": f"`{record['command']}`" if record.get("command") else None,
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()) or None,
    }
    missing = [name for name, text in known.items() if text is None]
    line = "; ".join(text for text in known.values() if text is not None)
    return line + (f" (not recorded: {', '.join(missing)})" if missing else "")


def figures(record: dict[str, Any], root: Path) -> list[tuple[Path, str]]:
    """Each figure file of a record and its caption (the figure's title, else its name in words)."""
    titles = record.get("figure_titles") or {}
    out = []
    for fig in record["figures"]:
        title = titles.get(fig) or Path(fig).stem.replace("_", " ")
        out.append((Path(root) / fig, title))
    return out


@dataclass
class Row:
    """One line of a claims table: a claim (``sub=False``) or one named value of a dict metric.

    ``values`` holds ours and the baseline's per scale; ``verdicts`` one ``(word, reason)`` per
    scale (``None`` where the scale has no such claim, and on sub-rows).
    """

    label: str
    paper: str = ""
    criterion: str = ""
    values: list[str] = field(default_factory=list)
    verdicts: list[tuple[str, str] | None] = field(default_factory=list)
    sub: bool = False


def claim_rows(records: dict[str, dict], kind: str, scales: list[str], misses: dict[str, str]) -> list[Row]:
    """The rows of a paper's table of findings or checks, its claims merged across scales by text."""
    merged: dict[str, dict[str, Any]] = {}
    for scale in scales:
        for claim in map(normalize_claim, records[scale]["claims"]):
            if claim["kind"] == kind:
                row = merged.setdefault(claim["text"], {"paper": None, "criterion": claim["criterion"]})
                row["paper"] = row["paper"] or claim["paper"]
                row[scale] = claim
    rows = []
    for text, row in merged.items():
        claims = [row.get(scale) for scale in scales]
        values = [short_value(c[key]) if c is not None and sub_rows(c[key]) is None else ""
                  for c in claims for key in ("measured", "baseline")]
        rows.append(Row(text, row["paper"] or "–", row["criterion"], values,
                        [verdict(c, misses) if c is not None else None for c in claims]))
        names = dict.fromkeys(name for c in claims if c is not None for key in ("measured", "baseline")
                              for name in sub_rows(c[key]) or {})
        for name in names:
            values = []
            for c in claims:
                for key in ("measured", "baseline"):
                    parts = sub_rows(c[key]) if c is not None else None
                    values.append(short_value(parts[name]) if parts is not None and name in parts else "")
            rows.append(Row(name, values=values, verdicts=[None] * len(scales), sub=True))
    return rows


def _byline(entry: Entry) -> str:
    return f"{entry.authors or 'authors unknown'}. {entry.venue}."


def _intro(generated: str, root: Path) -> str:
    entries = list(catalogue().values())
    return (f"Generated {generated} from the results in {root}. {sum(e.implemented for e in entries)} of "
            f"{len(entries)} papers are implemented. Only findings (comparisons the data could refute) count as "
            "claims reproduced; checks are exactness or accounting properties that hold by construction. "
            "Smoke runs only prove the pipeline runs and are not shown.")


PROVENANCE_HEAD = ("scale", "commits", "machines", "dates", "versions")


def _provenance_cells(sections: list[Section], scale: str) -> list[str] | None:
    """Where one scale's records come from, all papers together (distinct values; counts in brackets)."""
    records = [s.records[scale] for s in sections if scale in s.records]
    if not records:
        return None

    def distinct(values: list[str | None]) -> str:
        counts: dict[str, int] = {}
        for value in values:
            counts[value or "not recorded"] = counts.get(value or "not recorded", 0) + 1
        return ", ".join(f"{v} ({n})" if len(counts) > 1 else v for v, n in counts.items())

    machines = [f"{r['machine']['cpu']}, {r['machine']['cores']} cores" if r.get("machine") else None
                for r in records]
    dates = sorted(r["date"][:10] for r in records if r.get("date"))
    libraries: dict[str, set[str]] = {}
    for r in records:
        for name, version in (r.get("versions") or {}).items():
            libraries.setdefault(name, set()).add(version)
    versions = ", ".join(f"{k} {'/'.join(sorted(v))}" for k, v in libraries.items())
    return [scale, distinct([(r.get("git") or "")[:12] or None for r in records]), distinct(machines),
            f"{dates[0]} to {dates[-1]}" if dates else "not recorded", versions or "not recorded"]


SUMMARY_HEAD = ("scale", "papers", "findings holding", "known misses", "failing", "checks holding")


def _summary_cells(sections: list[Section], scale: str) -> list[str]:
    t = tally(sections, scale)
    findings = t["holds"] + t["known miss"] + t["fails"]
    return [scale, str(t["papers"]), f"{t['holds']}/{findings}", str(t["known miss"]), str(t["fails"]),
            f"{t['checks holding']}/{t['checks']}"]


KINDS = (("finding", "Findings"), ("check", "Checks"))


# ---------------------------------------------------------------- markdown


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_verdict(shown: tuple[str, str] | None, link: str) -> str:
    if shown is None:
        return ""
    word, reason = shown
    if word == "known miss":
        return f"[known miss]({link})" + (f": {_md(reason)}" if reason else "")
    return "holds" if word == "holds" else "**fails**"


def _markdown(sections: list[Section], root: Path, generated: str) -> str:
    out = ["# icml25 reproduction report", "", _intro(generated, root), "",
           "| " + " | ".join(SUMMARY_HEAD) + " |", "|" + " --- |" * len(SUMMARY_HEAD)]
    out += ["| " + " | ".join(_summary_cells(sections, scale)) + " |" for scale in EVIDENCE]
    origins = [c for c in (_provenance_cells(sections, scale) for scale in EVIDENCE) if c is not None]
    if origins:
        out += ["", "Provenance (each paper's exact command is under its tables):", "",
                "| " + " | ".join(PROVENANCE_HEAD) + " |", "|" + " --- |" * len(PROVENANCE_HEAD)]
        out += ["| " + " | ".join(_md(c) for c in cells) + " |" for cells in origins]
    out.append("")
    if not any(s.records for s in sections):
        out += ["No stored quick or full results yet: run `icml25 reproduce` first.", ""]
    for section in sections:
        entry, records = section.entry, section.records
        if not records:
            continue
        scales = [s for s in EVIDENCE if s in records]
        link = docs_link(root, entry.id)
        out += [f"## {entry.id}: {entry.title}", "", _md(f"{_byline(entry)} {entry.url or 'No public link.'}"), ""]
        for kind, heading in KINDS:
            rows = claim_rows(records, kind, scales, entry.known_misses)
            if not rows:
                continue
            head = ["claim", "paper reports", "criterion"]
            head += [f"{scale}: {col}" for scale in scales for col in ("ours", "baseline", "verdict")]
            out += [f"**{heading}**", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            for row in rows:
                cells = [f"↳ {_md(row.label)}" if row.sub else _md(row.label), _md(row.paper), _md(row.criterion)]
                for i, shown in enumerate(row.verdicts):
                    cells += [_md(row.values[2 * i]), _md(row.values[2 * i + 1]), _md_verdict(shown, link)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        out += [f"- {scale}: {provenance(records[scale])}" for scale in scales] + [""]
        for scale in scales:
            shown = figures(records[scale], root)
            for path, title in shown:
                caption = f"{title} ({scale} scale, {len(records[scale]['seeds'])} seeds)"
                if path.is_file():
                    out += [f"![{_md(caption)}]({os.path.relpath(path, root)})", "", f"*{caption}*", ""]
            if records[scale]["figures"] and not any(path.is_file() for path, _ in shown):
                out += [f"*The {scale}-scale figures were not stored with this result.*", ""]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- HTML

STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1280px;margin:auto;padding:1em;color:#222}"
    "table{border-collapse:collapse;margin:.6em 0 1.2em}td,th{border:1px solid #ccc;padding:4px 8px;"
    "vertical-align:top;font-size:14px}th{background:#f3f3f3;text-align:left}"
    "td.num{font-variant-numeric:tabular-nums;white-space:nowrap}tr.sub td{color:#555;font-size:13px}"
    "tr.sub td:first-child{padding-left:1.6em}.holds{color:#070}.fails{color:#b00;font-weight:bold}"
    ".miss{color:#a60}.prov{font-size:13px;color:#444}.prov code{font-size:12px}"
    "figure{display:inline-block;margin:6px;max-width:100%;vertical-align:top}figure img{max-width:100%;"
    "border:1px solid #eee}figcaption{font-size:13px;color:#333}.byline{color:#444}"
)


def _html_verdict(shown: tuple[str, str] | None, link: str) -> str:
    if shown is None:
        return "<td></td>"
    word, reason = shown
    if word == "holds":
        return "<td class='holds'>holds</td>"
    if word == "fails":
        return "<td class='fails'>fails</td>"
    tail = f": {html.escape(reason)}" if reason else ""
    return f"<td class='miss'><a href='{html.escape(link)}'>known miss</a>{tail}</td>"


def _html(sections: list[Section], root: Path, generated: str) -> str:
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>icml25 reproduction report</title>",
             f"<style>{STYLE}</style></head><body><h1>icml25 reproduction report</h1>",
             f"<p>{esc(_intro(generated, root))}</p>", "<table id='summary'><tr>"
             + "".join(f"<th>{h}</th>" for h in SUMMARY_HEAD) + "</tr>"]
    for scale in EVIDENCE:
        cells = _summary_cells(sections, scale)
        parts.append(f"<tr><td>{cells[0]}</td>" + "".join(f"<td class='num'>{c}</td>" for c in cells[1:]) + "</tr>")
    parts.append("</table>")
    origins = [c for c in (_provenance_cells(sections, scale) for scale in EVIDENCE) if c is not None]
    if origins:
        parts.append("<p>Provenance (each paper's exact command is under its tables):</p><table id='provenance'><tr>"
                     + "".join(f"<th>{h}</th>" for h in PROVENANCE_HEAD) + "</tr>")
        parts += ["<tr>" + "".join(f"<td class='prov'>{esc(c)}</td>" for c in cells) + "</tr>" for cells in origins]
        parts.append("</table>")
    if not any(s.records for s in sections):
        parts.append("<p>No stored quick or full results yet: run <code>icml25 reproduce</code> first.</p>")
    else:
        links = " · ".join(f"<a href='#{s.entry.id}'>{esc(s.entry.id)}</a>" for s in sections if s.records)
        parts.append(f"<p>{links}</p>")
    for section in sections:
        entry, records = section.entry, section.records
        if not records:
            continue
        scales = [s for s in EVIDENCE if s in records]
        link = docs_link(root, entry.id)
        url = f"<a href='{esc(entry.url)}'>{esc(entry.url)}</a>" if entry.url else "No public link."
        parts.append(f"<section id='{entry.id}'><h2>{esc(entry.id)}: {esc(entry.title)}</h2>"
                     f"<p class='byline'>{esc(_byline(entry))} {url}</p>")
        for kind, heading in KINDS:
            rows = claim_rows(records, kind, scales, entry.known_misses)
            if not rows:
                continue
            parts.append(f"<h3>{heading}</h3><table class='{kind}s'><tr><th rowspan='2'>claim</th>"
                         "<th rowspan='2'>paper reports</th><th rowspan='2'>criterion</th>"
                         + "".join(f"<th colspan='3'>{scale}</th>" for scale in scales) + "</tr><tr>"
                         + "<th>ours</th><th>baseline</th><th>verdict</th>" * len(scales) + "</tr>")
            for row in rows:
                label = f"↳ {esc(row.label)}" if row.sub else esc(row.label)
                cells = [f"<td>{label}</td><td>{esc(row.paper)}</td><td>{esc(row.criterion)}</td>"]
                for i, shown in enumerate(row.verdicts):
                    cells.append(f"<td class='num'>{esc(row.values[2 * i])}</td><td class='num'>"
                                 f"{esc(row.values[2 * i + 1])}</td>{_html_verdict(shown, link)}")
                parts.append(f"<tr{' class=sub' if row.sub else ''}>" + "".join(cells) + "</tr>")
            parts.append("</table>")
        parts.append("<ul class='prov'>")
        for scale in scales:
            line = re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(provenance(records[scale])))
            parts.append(f"<li><b>{scale}</b>: {line}</li>")
        parts.append("</ul>")
        for scale in scales:
            shown = figures(records[scale], root)
            for path, title in shown:
                if path.is_file():
                    data = base64.b64encode(path.read_bytes()).decode("ascii")
                    caption = esc(f"{title} ({scale} scale, {len(records[scale]['seeds'])} seeds)")
                    parts.append(f"<figure><img alt='{caption}' src='data:image/png;base64,{data}'>"
                                 f"<figcaption>{caption}</figcaption></figure>")
            if records[scale]["figures"] and not any(path.is_file() for path, _ in shown):
                parts.append(f"<p class='prov'>The {scale}-scale figures were not stored with this result.</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(
    root: Path = Path("results"), warn: Callable[[str], None] | None = default_warn
) -> tuple[Path, Path]:
    """Write ``<root>/report.md`` and ``<root>/report.html`` from the stored results.

    Corrupt or foreign JSON files in ``root`` are reported to ``warn`` and skipped.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    sections = collect(root, warn=warn)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md, page = root / "report.md", root / "report.html"
    write_bytes_atomic(md, _markdown(sections, root, generated).encode("utf-8"))
    write_bytes_atomic(page, _html(sections, root, generated).encode("utf-8"))
    return md, page
