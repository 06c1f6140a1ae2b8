"""The ``icml25`` command line: list, show, reproduce, report, and the GSM-∞ generator (gsm-infinity)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from icml25.harness.contract import SCALES
from icml25.harness.registry import Entry, catalogue, lookup
from icml25.harness.report import catalogue_markdown, short_value, write_report
from icml25.harness.runner import Outcome
from icml25.harness.store import StoreError, load_result, result_path
from icml25.reasoning.gsm_infinity import cli as gsm_cli

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad usage: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="icml25", description="Library code and reproductions of 38 ICML 2025 papers.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="the papers and their status")
    p_list.add_argument("--field", help="only papers of this field (e.g. conformal)")
    p_list.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    p_show = sub.add_parser("show", help="what a paper is, its API example and last result")
    p_show.add_argument("id")
    p_show.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_rep = sub.add_parser("reproduce", help="run reproductions (all implemented papers by default)")
    p_rep.add_argument("ids", nargs="*", metavar="ID")
    p_rep.add_argument("--scale", choices=SCALES, default="quick")
    p_rep.add_argument("--seeds", type=_positive_int, default=None,
                       help="number of seeds (0..N-1); default: each paper's own seed list")
    p_rep.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_rep.add_argument("--force", action="store_true", help="redo results that are already stored")
    p_rep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local: this machine (see --jobs); ray: one Ray task per paper (pip install icml25[ray])")
    p_rep.add_argument("--address", default=None,
                       help="Ray cluster address (ray backend; default: a running or new local instance)")
    p_rep.add_argument("--jobs", type=_positive_int, default=None,
                       help="local backend: papers run at once, each in its own worker process (default 1: in this "
                            "process)")
    p_rep.add_argument("--timeout", type=_positive_float, default=None, metavar="SECONDS",
                       help="fail a paper that runs longer than this, killing its worker (default: no limit)")
    p_report = sub.add_parser("report", help="write results/report.md and results/report.html")
    p_report.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    gsm_cli.add_parser(sub)
    return parser


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(highlight=False, stderr=stderr)


def _entries(field: str | None = None) -> list[Entry]:
    entries = list(catalogue().values())
    if field is not None:
        fields = sorted({e.field for e in entries})
        if field not in fields:
            raise UsageError(f"unknown field {field!r}; fields are: {', '.join(fields)}")
        entries = [e for e in entries if e.field == field]
    return entries


def cmd_list(args: argparse.Namespace) -> int:
    entries = _entries(args.field)
    if args.format == "markdown":
        sys.stdout.write(catalogue_markdown(entries))
    elif args.format == "json":
        rows = [{"id": e.id, "title": e.title, "short_title": e.short_title, "field": e.field,
                 "status": e.status, "seed": e.seed, "abstract_index": e.abstract_index,
                 "abstract": e.abstract} for e in entries]
        sys.stdout.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    else:
        from rich.table import Table

        table = Table(title=f"icml25: {sum(e.status == 'implemented' for e in entries)} of "
                            f"{len(entries)} papers implemented")
        for column in ("id", "field", "status", "paper"):
            table.add_column(column)
        for e in entries:
            style = {"implemented": "green", "planned": "dim", "broken": "red"}[e.status]
            table.add_row(e.id, e.field, f"[{style}]{e.status}[/]", e.short_title)
        _console().print(table)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    entry = _lookup(args.id)
    console = _console()
    console.print(f"[bold]{entry.id}[/] ({entry.field}, {entry.status}): {entry.title}")
    console.print(f"\n[bold]Abstract[/] ({entry.seed}, abstract {entry.abstract_index})\n{entry.abstract}\n")
    if entry.status == "planned":
        console.print("Status: planned; no library code or reproduction yet.")
        return EXIT_OK
    if entry.import_error:
        console.print(f"[red]Broken[/]: {entry.import_error}")
        return EXIT_FAILED
    paper = entry.paper
    module = importlib.import_module(paper.module)
    console.print(f"[bold]Library[/]: {paper.module}   anchors: {', '.join(paper.anchors) or '-'}")
    console.print(inspect.getdoc(module) or "(no module docstring)", markup=False)
    for scale in SCALES:
        stored = load_result(result_path(args.out, entry.id, scale))
        if stored is not None:
            console.print(f"\n[bold]Last {scale} result[/] ({stored['seconds']:.1f} s, seeds {stored['seeds']})")
            _print_claims(console, stored["claims"])
    return EXIT_OK


def _print_claims(console, claims: list[dict]) -> None:
    from rich.table import Table

    table = Table(show_lines=False)
    for column in ("claim", "paper", "measured", "baseline", "holds"):
        table.add_column(column, overflow="fold")
    for c in claims:
        verdict = "[green]yes[/]" if c["holds"] else "[yellow]NO[/]"
        table.add_row(c["text"], str(c["paper"]), short_value(c["measured"]), short_value(c["baseline"]), verdict)
    console.print(table)




def _lookup(pid: str) -> Entry:
    try:
        return lookup(pid)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def cmd_reproduce(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from icml25.harness.backends import BackendUnavailableError, Hooks, import_ray, run_many

    if args.backend == "ray":
        if args.jobs is not None:
            raise UsageError("--jobs applies to the local backend; Ray schedules tasks by their resources")
        try:
            import_ray()
        except BackendUnavailableError as exc:
            raise UsageError(str(exc)) from None
    elif args.address is not None:
        raise UsageError("--address applies to the ray backend (--backend ray)")
    if args.ids:
        entries = [_lookup(pid) for pid in dict.fromkeys(args.ids)]
        planned = [e.id for e in entries if e.status == "planned"]
        if planned:
            raise UsageError(f"not implemented yet (planned): {', '.join(planned)}")
    else:
        entries = [e for e in catalogue().values() if e.status != "planned"]
    console = _console()
    warnings = _console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[note]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        overall = progress.add_task(f"{args.scale} scale", total=len(entries), note="")
        tasks = {e.id: progress.add_task(f"  {e.id}", total=1.0, note="queued", start=False) for e in entries}

        def done(outcome: Outcome) -> None:
            progress.start_task(tasks[outcome.id])
            progress.update(tasks[outcome.id], completed=1.0, note=_summary(outcome))
            progress.advance(overall)

        hooks = Hooks(
            start=lambda pid: (progress.start_task(tasks[pid]), progress.update(tasks[pid], note="running")),
            progress=lambda pid, fraction, message: progress.update(
                tasks[pid], completed=fraction if fraction is not None else None, note=message),
            done=done,
            warn=lambda message: warnings.print(f"icml25: warning: {message}", markup=False, soft_wrap=True),
        )
        try:
            outcomes = run_many(entries, args.scale, n_seeds=args.seeds, root=args.out, force=args.force,
                                backend=args.backend, jobs=args.jobs or 1, timeout=args.timeout,
                                address=args.address, hooks=hooks)
        except BackendUnavailableError as exc:
            raise UsageError(str(exc)) from None
    for outcome in outcomes:
        if outcome.status == "failed":
            console.print(f"[red]{outcome.id} failed[/]:\n{outcome.error}", markup=True)
    for outcome in outcomes:
        if outcome.record and not all(c["holds"] for c in outcome.record["claims"]):
            console.print(f"[yellow]{outcome.id}[/]: claims that do not hold at {args.scale} scale:")
            _print_claims(console, [c for c in outcome.record["claims"] if not c["holds"]])
    return EXIT_FAILED if any(o.status == "failed" for o in outcomes) else EXIT_OK


def _summary(outcome: Outcome) -> str:
    if outcome.status == "failed":
        return "[red]failed[/]"
    claims = outcome.record["claims"]
    held = sum(c["holds"] for c in claims)
    tag = "stored" if outcome.status == "skipped" else f"{outcome.seconds:.1f} s"
    colour = "green" if held == len(claims) else "yellow"
    return f"[{colour}]{held}/{len(claims)} claims hold[/] ({tag})"


def cmd_report(args: argparse.Namespace) -> int:
    md, html = write_report(args.out)
    print(f"wrote {md} and {html}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``icml25`` console script; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
        commands = {"list": cmd_list, "show": cmd_show, "reproduce": cmd_reproduce, "report": cmd_report,
                    "gsm-infinity": gsm_cli.main}
        return commands[args.command](args)
    except UsageError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("icml25: interrupted; finished results are stored, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
