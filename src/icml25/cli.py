"""The ``icml25`` command line: list, show, reproduce, report, publish, bench, and the papers' own subcommands.

A paper adds a subcommand by naming a module in ``Paper(commands=(...))``; that module defines
``add_parser(subparsers) -> ArgumentParser`` and ``main(args) -> int``.  The command line knows no
paper by name: it finds them in the catalogue (:mod:`icml25.harness.registry`), and imports them
only when the command given is not one of its own.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from icml25.harness.contract import SCALES
from icml25.harness.registry import Entry, catalogue, extra_hint, lookup
from icml25.harness.store import StoreError, committed_path, load_result, result_path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
BUILTIN = ("list", "show", "reproduce", "report", "publish", "bench")
CHECKOUT = Path(__file__).resolve().parents[2]


class UsageError(Exception):
    """Bad usage: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit 2
        raise UsageError(message)


def _number(kind: str, **bounds) -> Callable[[str], int | float]:
    """An argparse ``type`` that reads an ``int``/``real`` and checks it with :func:`check_scalar`."""

    def parse(text: str) -> int | float:
        from icml25.utils.validation import check_scalar  # imports scikit-learn: only when an option is given

        try:
            value = int(text) if kind == "int" else float(text)
        except ValueError:
            value = text
        try:
            return check_scalar(value, "value", kind, **bounds)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value ")) from None

    return parse


COUNT = _number("int", min=1)
SECONDS = _number("real", min=0, inclusive="neither")


def build_parser(registered: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``registered`` adds the papers' own subcommands (imports their modules)."""
    parser = _Parser(prog="icml25", description="Library code and reproductions of 38 ICML 2025 papers.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p_list = sub.add_parser("list", help="the papers and their status")
    p_list.add_argument("--field", help="only papers of this field (e.g. conformal)")
    p_list.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    p_show = sub.add_parser("show", help="what a paper is, its API example and its stored results")
    p_show.add_argument("id")
    p_show.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_rep = sub.add_parser("reproduce", help="run reproductions (all implemented papers by default)")
    p_rep.add_argument("ids", nargs="*", metavar="ID")
    p_rep.add_argument("--scale", choices=SCALES, default="quick")
    p_rep.add_argument("--seeds", type=COUNT, default=None,
                       help="number of seeds (0..N-1); default: each paper's own seed list")
    p_rep.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_rep.add_argument("--force", action="store_true", help="redo results that are already stored")
    p_rep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local: this machine (see --jobs); ray: one Ray task per paper (pip install -e '.[ray]')")
    p_rep.add_argument("--address", default=None,
                       help="Ray cluster address (ray backend; default: a running or new local instance)")
    p_rep.add_argument("--jobs", type=COUNT, default=None,
                       help="local backend: papers run at once, each in its own worker process (default 1: in this "
                            "process)")
    p_rep.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                       help="fail a paper that runs longer than this, killing its worker (default: no limit)")
    p_report = sub.add_parser("report", help="write results/report.md and results/report.html")
    p_report.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_pub = sub.add_parser("publish", help="copy a full-scale result and its figures to results/full/ to commit")
    p_pub.add_argument("ids", nargs="+", metavar="ID")
    p_pub.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    p_bench = sub.add_parser("bench", help="compare papers with the field's installed libraries (benchmarks/)")
    p_bench.add_argument("ids", nargs="*", metavar="ID")
    p_bench.add_argument("--size", choices=("smoke", "full"), default="full")
    p_bench.add_argument("--seed", type=_number("int", min=0), default=0)
    p_bench.add_argument("--out", type=Path, default=Path("results"), help="results folder (records in OUT/bench/)")
    p_bench.add_argument("--page", type=Path, default=None,
                         help="also write this markdown page from every record in OUT/bench/ (docs/benchmarks.md)")
    p_bench.add_argument("--page-only", action="store_true", help="write --page from the stored records, run nothing")
    p_bench.add_argument("--dir", type=Path, default=None,
                         help="the benchmarks folder (default: ./benchmarks, else the checkout's)")
    if registered:
        for module in _command_modules():
            module.add_parser(sub).set_defaults(handler=module.main)
    return parser


def _command_modules() -> list:
    """The modules named in the papers' ``Paper(commands=...)`` whose extras are installed."""
    names = [name for e in catalogue().values() if e.implemented and not e.missing_extras for name in e.commands]
    return [importlib.import_module(name) for name in dict.fromkeys(names)]


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


def _status_line(entry: Entry) -> str:
    return extra_hint(entry.missing_extras) if entry.status == "needs-extra" else entry.status


def cmd_list(args: argparse.Namespace) -> int:
    from icml25.harness.report import catalogue_markdown

    entries = _entries(args.field)
    if args.format == "markdown":
        sys.stdout.write(catalogue_markdown(entries))
    elif args.format == "json":
        rows = [{"id": e.id, "title": e.title, "short_title": e.short_title, "field": e.field,
                 "authors": e.authors, "venue": e.venue, "arxiv": e.arxiv, "url": e.url,
                 "status": _status_line(e), "implemented": e.implemented, "extras": list(e.extras),
                 "docs": e.docs if e.implemented else None, "abstract": e.abstract} for e in entries]
        sys.stdout.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    else:
        from rich import box
        from rich.table import Table

        table = Table(title=f"icml25: {sum(e.implemented for e in entries)} of {len(entries)} papers implemented",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("id", no_wrap=True, min_width=max(len(e.id) for e in entries))
        table.add_column("field", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("paper")
        hints = {}
        for e in entries:
            status = e.status
            if status == "needs-extra":
                hints[e.missing_extras] = extra_hint(e.missing_extras)
                status = f"[yellow]needs {','.join(e.missing_extras)}[/]"
            else:
                status = f"[{'green' if status == 'implemented' else 'dim'}]{status}[/]"
            table.add_row(e.id, e.field, status, e.short_title)
        console = _console()
        console.print(table)
        for hint in hints.values():
            console.print(hint, markup=False)
    return EXIT_OK


def _api_example(entry: Entry) -> tuple[str, str] | None:
    """``(where, code)``: the first python block of the paper's docs page, verbatim."""
    page = CHECKOUT / entry.docs
    if not page.is_file():
        return None
    block = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return (entry.docs, block.group(1)) if block else None


def _stored(out: Path, entry: Entry) -> list[tuple[str, Path, dict]]:
    """The stored quick and full results of ``entry`` (a committed full result if none newer)."""
    found = []
    for scale, paths in (("quick", [result_path(out, entry.id, "quick")]),
                         ("full", [result_path(out, entry.id, "full"), committed_path(out, entry.id),
                                   committed_path(CHECKOUT / "results", entry.id)])):
        for path in paths:
            record = load_result(path)
            if record is not None:
                found.append((scale, path, record))
                break
    return found


def cmd_show(args: argparse.Namespace) -> int:
    entry = _lookup(args.id)
    console = _console()
    console.print(f"[bold]{entry.id}[/]: {entry.title}", soft_wrap=True)
    console.print(entry.authors or "authors unknown (not found in the sources available)", soft_wrap=True)
    console.print(f"{entry.venue}. {entry.url or 'no public link'}", soft_wrap=True)
    console.print(f"field: {entry.field}   status: {_status_line(entry)}", markup=False)
    console.print(f"\n[bold]Abstract[/]\n{entry.abstract}\n")
    if not entry.implemented:
        console.print("Planned: no library code or reproduction yet.")
        return EXIT_OK
    console.print(f"[bold]Guide[/]: {entry.docs}")
    example = _api_example(entry)
    if example is not None:
        console.print(f"\n[bold]API example[/] (from {example[0]}):")
        sys.stdout.write(example[1])
        sys.stdout.flush()
    if entry.missing_extras:
        return EXIT_OK
    entry.load()
    if entry.import_error:
        console.print(f"[red]Broken[/]: {entry.import_error}", soft_wrap=True)
        return EXIT_FAILED
    paper = entry.paper
    console.print(f"\n[bold]Library[/]: {paper.module}   anchors: {', '.join(paper.anchors) or '-'}", soft_wrap=True)
    for scale, path, record in _stored(args.out, entry):
        when = record.get("date") or "date not recorded"
        console.print(f"\n[bold]Stored {scale} result[/] ({path}; {record['seconds']:.1f} s, seeds {record['seeds']}, "
                      f"{when})", soft_wrap=True)
        _print_claims(console, record["claims"], entry.known_misses)
    return EXIT_OK


def _print_claims(console, claims: list[dict], misses: dict[str, str]) -> None:
    from rich.table import Table

    from icml25.harness.report import normalize_claim, short_value, verdict

    table = Table(show_lines=False)
    for column in ("claim", "kind", "criterion", "ours", "baseline", "verdict"):
        table.add_column(column, overflow="fold")
    for c in map(normalize_claim, claims):
        word, reason = verdict(c, misses)
        colour = {"holds": "green", "known miss": "yellow", "fails": "red"}[word]
        shown = f"[{colour}]{word}[/]" + (f": {reason}" if reason else "")
        table.add_row(c["text"], c["kind"], c["criterion"], short_value(c["measured"]), short_value(c["baseline"]),
                      shown)
    console.print(table)


def _lookup(pid: str) -> Entry:
    try:
        return lookup(pid)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def _select(ids: Sequence[str], console) -> tuple[list[Entry], list[Entry]]:
    """The entries to run and those skipped because an extra is missing (named ids: a usage error)."""
    if ids:
        entries = [_lookup(pid) for pid in dict.fromkeys(ids)]
        planned = [e.id for e in entries if not e.implemented]
        if planned:
            raise UsageError(f"not implemented yet (planned): {', '.join(planned)}")
        lacking = [e for e in entries if e.missing_extras]
        if lacking:
            raise UsageError("; ".join(f"{e.id} {extra_hint(e.missing_extras)}" for e in lacking))
        return entries, []
    entries = [e for e in catalogue().values() if e.implemented]
    skipped = [e for e in entries if e.missing_extras]
    for e in skipped:
        console.print(f"icml25: skipping {e.id}: it {extra_hint(e.missing_extras)}", markup=False, soft_wrap=True)
    return [e for e in entries if not e.missing_extras], skipped


def cmd_reproduce(args: argparse.Namespace) -> int:
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
    console = _console()
    warnings = _console(stderr=True)
    entries, skipped = _select(args.ids, warnings)
    hooks = Hooks(warn=lambda message: warnings.print(f"icml25: warning: {message}", markup=False, soft_wrap=True))
    runner = dict(n_seeds=args.seeds, root=args.out, force=args.force, backend=args.backend, jobs=args.jobs or 1,
                  timeout=args.timeout, address=args.address)
    try:
        if console.is_terminal:
            outcomes = _run_with_bars(console, entries, args.scale, hooks, runner, run_many)
        else:
            outcomes = _run_with_lines(console, entries, args.scale, hooks, runner, run_many)
    except BackendUnavailableError as exc:
        raise UsageError(str(exc)) from None
    for outcome in outcomes:
        if outcome.status == "failed":
            console.print(f"[red]{outcome.id} failed[/]:\n{outcome.error}", markup=True)
    by_id = {e.id: e for e in entries}
    for outcome in outcomes:
        if outcome.record and not all(c["holds"] for c in outcome.record["claims"]):
            console.print(f"[yellow]{outcome.id}[/]: claims that do not hold at {args.scale} scale:")
            _print_claims(console, [c for c in outcome.record["claims"] if not c["holds"]],
                          by_id[outcome.id].known_misses)
    if any(o.status == "failed" for o in outcomes):
        return EXIT_FAILED
    return EXIT_USAGE if skipped else EXIT_OK


def _run_with_bars(console, entries, scale, hooks, runner, run_many):
    """Progress bars on a terminal: one line per paper, one clock (its elapsed time) per line."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[note]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        overall = progress.add_task(f"{scale} scale", total=len(entries), note="")
        tasks = {e.id: progress.add_task(f"  {e.id}", total=1.0, note="queued", start=False) for e in entries}

        def done(outcome) -> None:
            task = tasks[outcome.id]
            progress.update(task, completed=1.0, note=_summary(outcome, entries))
            progress.stop_task(task)
            progress.advance(overall)

        hooks.start = lambda pid: (progress.start_task(tasks[pid]), progress.update(tasks[pid], note="running"))
        hooks.progress = lambda pid, fraction, message: progress.update(
            tasks[pid], completed=fraction if fraction is not None else None, note=message)
        hooks.done = done
        return run_many(entries, scale, hooks=hooks, **runner)


def _run_with_lines(console, entries, scale, hooks, runner, run_many):
    """Without a terminal (piped, CI): one line per finished paper, with its time."""
    width = max((len(e.id) for e in entries), default=0)

    def done(outcome) -> None:
        when = "stored" if outcome.status == "skipped" else f"{outcome.seconds:.1f} s"
        console.print(f"{outcome.id:<{width}}  {scale}  {_summary(outcome, entries)}  ({when})", soft_wrap=True)

    hooks.done = done
    return run_many(entries, scale, hooks=hooks, **runner)


def _summary(outcome, entries: Sequence[Entry]) -> str:
    if outcome.status == "failed":
        return "[red]failed[/]"
    from icml25.harness.report import normalize_claim

    misses = next((e.known_misses for e in entries if e.id == outcome.id), {})
    claims = [normalize_claim(c) for c in outcome.record["claims"]]
    held = sum(c["holds"] for c in claims)
    known = sum(not c["holds"] and c["text"] in misses for c in claims)
    colour = "green" if held == len(claims) else "yellow" if held + known == len(claims) else "red"
    extra = f", {known} known miss{'es' if known > 1 else ''}" if known else ""
    return f"[{colour}]{held}/{len(claims)} claims hold{extra}[/]"


def cmd_report(args: argparse.Namespace) -> int:
    from icml25.harness.report import write_report

    md, html = write_report(args.out)
    print(f"wrote {md} and {html}")
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    from icml25.harness.store import publish_full

    for pid in dict.fromkeys(args.ids):
        _lookup(pid)
        try:
            target = publish_full(args.out, pid)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        print(f"wrote {target} and its figures; commit them with: git add {target} {target.with_suffix('')}")
    return EXIT_OK


def _bench_dir(given: Path | None) -> Path:
    for folder in [given] if given is not None else [Path("benchmarks"), CHECKOUT / "benchmarks"]:
        if folder.is_dir():
            return folder
    raise UsageError(f"no benchmarks folder {given}" if given is not None else
                     "no benchmarks folder: run from the icml25 checkout or pass --dir")


def cmd_bench(args: argparse.Namespace) -> int:
    from icml25.harness import bench

    if args.page_only and (args.page is None or args.ids):
        raise UsageError("--page-only needs --page and no ID")
    found = {} if args.page_only else bench.find(_bench_dir(args.dir))
    unknown = [pid for pid in args.ids if pid not in found]
    if unknown:
        raise UsageError(f"no benchmark for {', '.join(unknown)}; benchmarks: {', '.join(found)}")
    status = EXIT_OK
    for pid in dict.fromkeys(args.ids) if args.ids else found:  # nothing with --page-only
        try:
            record = bench.run_benchmark(found[pid], args.size, args.seed)
        except bench.MissingPeerError as exc:
            print(f"{pid}: {exc}", file=sys.stderr)
            status = max(status, EXIT_USAGE)
            continue
        except Exception as exc:  # one failed benchmark does not stop the others
            print(f"{pid}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = max(status, EXIT_FAILED)
            continue
        bench.store(args.out, record)
        print(bench.summary_line(record), flush=True)
    if args.page is not None:
        from icml25.harness.store import warn, write_bytes_atomic

        write_bytes_atomic(args.page, bench.page_markdown(bench.load_records(args.out, warn)).encode("utf-8"))
        print(f"wrote {args.page}")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``icml25`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        first = next((a for a in argv if not a.startswith("-")), None)
        args = build_parser(registered=first not in BUILTIN).parse_args(argv)
        commands = {"list": cmd_list, "show": cmd_show, "reproduce": cmd_reproduce, "report": cmd_report,
                    "publish": cmd_publish, "bench": cmd_bench}
        handler = commands.get(args.command) or args.handler
        return handler(args)
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
