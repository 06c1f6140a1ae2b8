"""The command line: exit codes, one-line errors, listing formats, extras, registered subcommands, progress."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from icml25 import cli
from icml25.cli import main
from icml25.harness import Paper
from icml25.harness.registry import Entry, catalogue, lookup

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
fakes = importlib.import_module("harness_fakes")
SRC = Path(cli.__file__).resolve()


def test_unknown_paper_is_usage_error(capsys):
    assert main(["reproduce", "nosuchpaper"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown paper id 'nosuchpaper'" in err[0]


def test_unknown_scale_is_usage_error(capsys):
    assert main(["reproduce", "--scale", "huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'huge'" in err[0]


@pytest.mark.parametrize("args", [["reproduce", "--seeds", "0"], ["frobnicate"], ["list", "--field", "nope"],
                                  ["show", "ultratw"], ["publish", "ultratw"]])
def test_other_bad_usage_exits_2(args, capsys):
    assert main(args) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_list_json_covers_catalogue(capsys):
    assert main(["list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 38 and all(r["abstract"] and r["venue"] for r in rows)
    assert {"authors", "arxiv", "url", "docs", "extras"} <= set(rows[0]) and "seed" not in rows[0]


def test_list_field_filter(capsys):
    assert main(["list", "--field", "transport", "--format", "json"]) == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)} == {"ultratwd", "wilt"}


def test_list_imports_no_reproduction_and_no_torch():
    code = ("import sys; from icml25.cli import main; main(['list']); "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('icml25.reproductions.', 'sklearn'))]; "
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]


def test_list_never_truncates_ids_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    words = set(re.findall(r"[a-z_]+", out))
    assert set(catalogue()) <= words


def without(entry: Entry, monkeypatch, missing=("torch",)) -> None:
    """Make ``entry`` look as if the modules in ``missing`` were not installed (nothing imported)."""
    real = importlib.util.find_spec
    monkeypatch.setattr("icml25.harness.registry.importlib.util.find_spec",
                        lambda name, *a: None if name in missing else real(name, *a))
    monkeypatch.setattr(entry, "module", None)
    monkeypatch.setattr(entry, "import_error", None)


def test_a_missing_extra_is_named_with_its_install_command(monkeypatch, capsys):
    entry = next(e for e in catalogue().values() if "torch" in e.extras)
    without(entry, monkeypatch)
    hint = "needs the torch extra: pip install -e '.[torch]'"
    assert entry.status == "needs-extra"
    assert main(["list"]) == 0
    assert hint in capsys.readouterr().out
    assert main(["list", "--format", "json"]) == 0
    assert {r["id"]: r["status"] for r in json.loads(capsys.readouterr().out)}[entry.id] == hint
    assert main(["show", entry.id]) == 0
    out = capsys.readouterr().out
    assert hint in out and "Broken" not in out and "ModuleNotFoundError" not in out
    assert main(["reproduce", entry.id, "--scale", "smoke"]) == 2
    assert capsys.readouterr().err.strip() == f"icml25: error: {entry.id} {hint}"
    assert entry.module is None  # nothing was imported


def test_show_prints_citation_guide_example_and_stored_results(tmp_path, capsys):
    for entry in catalogue().values():
        assert main(["show", entry.id, "--out", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert entry.title in out.replace("\n", " ") and entry.venue in out
        assert entry.seed not in out and "abstract " + str(entry.abstract_index) not in out
        assert (entry.authors or "authors unknown") in out
        assert ("Planned" in out) == (not entry.implemented)
        if entry.implemented:
            assert f"docs/papers/{entry.id}.md" in out
    page = (SRC.parents[2] / "docs" / "papers" / "ultratwd.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", page, re.S).group(1)
    assert main(["show", "ultratwd", "--out", str(tmp_path)]) == 0
    assert example in capsys.readouterr().out  # verbatim, not re-wrapped
    if (SRC.parents[2] / "results" / "full" / "dilqr.json").is_file():
        assert main(["show", "dilqr", "--out", str(tmp_path)]) == 0
        assert "Stored full result" in capsys.readouterr().out
    assert main(["report", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").is_file() and (tmp_path / "report.md").is_file()


def test_without_a_terminal_progress_is_one_line_per_paper_with_one_clock(tmp_path, monkeypatch, capsys):
    entries = {e.id: e for e in (fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fbb"))}
    monkeypatch.setattr(cli, "lookup", lambda pid: entries[pid])
    assert main(["reproduce", "fa", "fbb", "--scale", "smoke", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("fa   smoke  1/1 claims hold")
    assert all(len(re.findall(r"\d+\.\d s", line)) == 1 for line in lines)
    assert main(["reproduce", "fa", "--scale", "smoke", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == "fa  smoke  1/1 claims hold  (stored)"


def fake_command_module() -> types.ModuleType:
    module = types.ModuleType("icml25_fake_command")

    def add_parser(subparsers) -> argparse.ArgumentParser:
        parser = subparsers.add_parser("fake-tool", help="a paper's own tool")
        parser.add_argument("--n", type=int, default=1)
        return parser

    module.add_parser = add_parser
    module.main = lambda args: 40 + args.n
    return module


def test_a_paper_registers_its_own_subcommand(monkeypatch):
    monkeypatch.setitem(sys.modules, "icml25_fake_command", fake_command_module())
    paper = Paper(id="fc", title="t", module="m", commands=("icml25_fake_command",))
    entry = Entry("fc", "t", "t", "test", module=types.SimpleNamespace(PAPER=paper))
    monkeypatch.setattr(cli, "catalogue", lambda: {"fc": entry})
    assert main(["fake-tool", "--n", "2"]) == 42
    assert "fake-tool" in cli.build_parser().format_help()
    assert "fake-tool" not in cli.build_parser(registered=False).format_help()


def test_the_command_line_names_no_paper():
    text = SRC.read_text(encoding="utf-8")
    assert not [pid for pid in catalogue() if pid in text] and "gsm" not in text.lower()


@pytest.mark.skipif("icml25.reasoning.gsm_infinity.cli" not in lookup("gsm_infinity").commands,
                    reason="gsm_infinity does not declare its subcommand yet")
def test_gsm_infinity_subcommand_is_registered(tmp_path, capsys):
    out = tmp_path / "bench.jsonl"
    assert main(["gsm-infinity", "generate", "--ops", "2,3", "--per-op", "2", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 4
    assert main(["gsm-infinity", "validate", str(out)]) == 0
    assert main(["gsm-infinity", "generate", "--ops", "x", "--out", str(tmp_path / "bad.jsonl")]) == 2
    assert "expected ints" in capsys.readouterr().err
    assert not (tmp_path / "bad.jsonl").exists()
